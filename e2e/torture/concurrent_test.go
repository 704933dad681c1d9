package torture_test

// Many workspaced processes at once on one directory root, updating one
// entry: read-modify-writes through --if-version that retry on conflict,
// and the same under `workspaced lock`. No update is lost.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
)

// The exit codes of workspaced that these tests tell apart.
const (
	exitOK       = 0
	exitConflict = 4 // a version or lock conflict
)

// eachEnv sets how many read-modify-writes each process of the
// concurrent tests makes (WORKSPACED_TORTURE_EACH=50 for the long run);
// the default, defaultEach, keeps the processes overlapping past their
// first conflicts, which is what losing an update needs:
// TestConcurrentUpdatesIfVersion fails unless some of its updates did
// conflict.
const (
	eachEnv     = "WORKSPACED_TORTURE_EACH"
	defaultEach = 5
)

// updatesEach is $WORKSPACED_TORTURE_EACH, else defaultEach.
func updatesEach(t *testing.T) int {
	t.Helper()
	v := os.Getenv(eachEnv)
	if v == "" {
		return defaultEach
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count of at least 1", eachEnv, v)
	}
	return n
}

// checkItems reads the array value of key and checks it holds every item
// p<P>-<I> exactly once, each worker's items in its order.
func checkItems(t *testing.T, w *clitest.WS, key string, procs, each int) {
	t.Helper()
	var items []string
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", key), &items)
	if len(items) != procs*each {
		t.Fatalf("%d items, want %d: updates were lost", len(items), procs*each)
	}
	next := make([]int, procs)
	for _, it := range items {
		var p, i int
		if _, err := fmt.Sscanf(it, "p%d-%d", &p, &i); err != nil || p >= procs || next[p] != i {
			t.Fatalf("item %q out of place (worker %d expected item %d)", it, p, next[p])
		}
		next[p]++
	}
}

// procs processes × updatesEach read-modify-writes of one key through
// get --json and update --if-version, retrying on conflict (exit 4): some
// conflict, none is lost.
func TestConcurrentUpdatesIfVersion(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	w := clitest.NewDir(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "items", "--description", "shared list", "--value", "[]")
	// Two processes are enough to lose an update; four conflict from
	// their first round, and every lost attempt costs two process starts
	// (eight made 119 retries of 40 updates: 320 starts).
	const procs = 4
	each := updatesEach(t)
	var conflicts sync.Map
	clitest.Parallel(t, procs, func(p int) error {
		n := 0
		for i := range each {
			item := fmt.Sprintf("p%d-%d", p, i)
			for lost := 0; ; lost++ {
				r, err := clitest.Exec(w.Dir, w.Env, "", "env", "get", "--task", "t1", "--key", "items", "--json")
				if err != nil || r.Code != 0 {
					return fmt.Errorf("get: %v %v", err, r)
				}
				var e struct {
					Version int      `json:"version"`
					Value   []string `json:"value"`
				}
				if err := json.Unmarshal([]byte(r.Stdout), &e); err != nil {
					return fmt.Errorf("get --json: %w", err)
				}
				v, _ := json.Marshal(append(e.Value, item))
				r, err = clitest.Exec(w.Dir, w.Env, "", "env", "update", "--task", "t1", "--key", "items",
					"--value", string(v), "--if-version", strconv.Itoa(e.Version), "--agent", fmt.Sprintf("p%d", p))
				if err != nil {
					return err
				}
				if r.Code == exitOK {
					break
				}
				if r.Code != exitConflict || !strings.Contains(r.Stderr, "version is") {
					return fmt.Errorf("update: want exit 0 or 4, got %v", r)
				}
				n++
				// Back off with jitter, as a real client of a
				// compare-and-swap would: on two cores every lost
				// attempt costs two process starts.
				time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) << min(lost, 6))))
			}
		}
		conflicts.Store(p, n)
		return nil
	})
	checkItems(t, w, "items", procs, each)
	total := 0
	conflicts.Range(func(_, v any) bool { total += v.(int); return true })
	t.Logf("%d conflicts retried", total)
	if total == 0 {
		t.Fatalf("no update of %d conflicted: the processes never overlapped, so nothing could be lost", procs*each)
	}
	var e struct{ Version int }
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "items", "--json"), &e)
	if e.Version != 1+procs*each {
		t.Fatalf("version %d, want %d", e.Version, 1+procs*each)
	}
}

// The same read-modify-writes, each a shell script run under
// `workspaced lock`: the lock serializes them, so none conflicts or is lost.
func TestConcurrentUpdatesUnderLock(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	jq, err := exec.LookPath("jq")
	if err != nil {
		optdep.Skip(t, "jq", "jq is not installed (Debian: apt-get install jq)")
	}
	w := clitest.NewDir(t)
	// Processes queue for one lock, each holding it while a script
	// starts three processes: on a busy machine a waiter can queue past
	// the default 30 s, which is not what this test is about.
	cfg := filepath.Join(w.Root, "workspace.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"lock_timeout": "30s"`, `"lock_timeout": "5m"`, 1))
	if !strings.Contains(string(b), `"lock_timeout": "5m"`) {
		t.Fatalf("workspace.json has no lock_timeout of 30s to raise:\n%s", b)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "items", "--description", "shared list", "--value", "[]")
	env := append(append([]string{}, w.Env...), "WSD="+clitest.Bin(), "JQ="+jq)
	const script = `v=$("$WSD" env get --task t1 --key items) &&
"$WSD" env update --task t1 --key items --value "$(printf '%s' "$v" | "$JQ" -c --arg i "$ITEM" '. + [$i]')" >/dev/null`
	// As many processes as TestConcurrentUpdatesIfVersion, released
	// together: without the lock their first rounds overlap.
	const procs = 4
	each := updatesEach(t)
	clitest.Parallel(t, procs, func(p int) error {
		for i := range each {
			// A fresh slice each time: appending to the shared env would
			// write into its spare capacity from several goroutines.
			r, err := clitest.Exec(w.Dir, slices.Concat(env, []string{fmt.Sprintf("ITEM=p%d-%d", p, i)}), "",
				"lock", "--task", "t1", "--name", "items", "--agent", fmt.Sprintf("p%d", p), "--", "sh", "-c", script)
			if err != nil || r.Code != 0 || r.Stderr != "" {
				return fmt.Errorf("lock: %v %v", err, r)
			}
		}
		return nil
	})
	checkItems(t, w, "items", procs, each)
}
