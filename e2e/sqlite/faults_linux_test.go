package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// syncfs syncs the filesystem of dir.
func syncfs(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
}

// remount remounts mnt with opts ("ro" or "rw"). A filesystem with a file
// open for writing cannot be remounted read-only: the callers make sure no
// process of theirs holds the database then.
func remount(t *testing.T, mnt, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", mnt, opts, err, out)
	}
}

// waitingMarkers counts the markers waiting.
func waitingMarkers(t *testing.T, s *sqlite.Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), "SELECT count(*) FROM markers").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// serveFails runs `workspaced serve` and checks it fails at once with an
// error naming want and the hint.
func serveFails(t *testing.T, w *clitest.WS, want, hint string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := clitest.CommandContext(ctx, "serve")
	cmd.Dir, cmd.Env = w.Dir, w.Env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ctx.Err() != nil || !strings.Contains(string(out), "workspaced: ") ||
		!strings.Contains(string(out), want) || !strings.Contains(string(out), hint) {
		t.Fatalf("serve: want it to fail naming %q with %q, got %v:\n%s", want, hint, err, out)
	}
	t.Logf("serve: %v: %s", err, out)
}

// failure is one agent command that failed, and the fault it met.
type failure struct {
	fault string
	args  []string
	r     clitest.Result
}

// faultAgents are agent processes run as a shell script runs them: one
// `workspaced claim` or `workspaced done` command at a time, each tried
// again after a failure until it succeeds. Paused, they start no command.
type faultAgents struct {
	w      *clitest.WS
	wrote  *written
	fault  atomic.Pointer[string] // the fault the machine has now, for the failures' record
	paused atomic.Bool
	busy   atomic.Int32 // commands running
	mu     sync.Mutex
	fails  []failure
	wg     sync.WaitGroup
}

// run starts agent name on subs of task.
func (a *faultAgents) run(task, name string, subs []string) {
	a.wg.Go(func() {
		for _, sub := range subs {
			a.until(task, sub, "claim", "claim", "--task", task, "--agent", name, "--subtask", sub)
			a.until(task, sub, "done", "done", "--task", task, "--agent", name, "--subtask", sub, "--output", "outputs/"+sub+".json")
		}
	})
}

// Retry delays of an agent whose command failed: the first pause, and the
// cap the pause doubles up to while the fault lasts, as a script backs off.
const (
	agentRetryFirst = 20 * time.Millisecond
	agentRetryMax   = 320 * time.Millisecond
)

// until runs the command until it exits 0 and notes the marker it
// printed. After each failure it waits before it tries again, twice as
// long each time up to agentRetryMax.
func (a *faultAgents) until(task, sub, kind string, args ...string) {
	delay := agentRetryFirst
	for {
		for a.paused.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		a.busy.Add(1)
		fault := *a.fault.Load()
		r, err := clitest.Exec(a.w.Dir, a.w.Env, "", args...)
		a.busy.Add(-1)
		if err == nil && r.Code == 0 {
			if err := a.wrote.note(kind, task, sub, path.Base(strings.TrimSpace(r.Stdout))); err != nil {
				a.fail(fault, args, clitest.Result{Code: -1, Stderr: err.Error()})
			}
			return
		}
		if err != nil {
			r = clitest.Result{Code: -1, Stderr: err.Error()}
		}
		a.fail(fault, args, r)
		time.Sleep(delay)
		delay = min(2*delay, agentRetryMax)
	}
}

func (a *faultAgents) fail(fault string, args []string, r clitest.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fails = append(a.fails, failure{fault: fault, args: args, r: r})
}

// failures copies the failures so far.
func (a *faultAgents) failures() []failure {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]failure(nil), a.fails...)
}

// setFault records the fault the next commands meet.
func (a *faultAgents) setFault(f string) { a.fault.Store(&f) }

// pause stops the agents from starting commands and waits until none
// runs.
func (a *faultAgents) pause(t *testing.T) {
	a.paused.Store(true)
	eventually(t, "the agents' commands to end", func() (bool, string) {
		n := a.busy.Load()
		return n == 0, fmt.Sprintf("%d running", n)
	})
}

// faultWords are what an error must say of each fault, and its hint.
var faultWords = map[string][2]string{
	"full":      {"full", "hint: the filesystem is full"},
	"read-only": {"read-only", "hint: the filesystem is mounted read-only"},
}

// checkFailures checks every failed command: one "workspaced: " error
// naming its fault and the hint to mend it, never "database is locked",
// never a panic, nothing on stdout; a command that failed with no fault
// on the machine fails the test.
func checkFailures(t *testing.T, fails []failure) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, f := range fails {
		words, ok := faultWords[f.fault]
		msg := f.r.Stderr
		switch {
		case f.fault == "mending":
			// Started while a fault came or was mended: either error.
			if !strings.Contains(msg, faultWords["full"][1]) && !strings.Contains(msg, faultWords["read-only"][1]) {
				t.Errorf("workspaced %q as the fault was mended: %v", f.args, f.r)
			}
		case !ok:
			t.Errorf("workspaced %q failed with no fault on the machine (%s): %v", f.args, f.fault, f.r)
		case f.r.Code != 1 || !strings.HasPrefix(msg, "workspaced: ") || f.r.Stdout != "" ||
			!strings.Contains(strings.ToLower(msg), words[0]) || !strings.Contains(msg, words[1]):
			t.Errorf("workspaced %q on a %s disk: want exit 1 and an error naming it with its hint, got %v", f.args, f.fault, f.r)
		case strings.Contains(msg, "locked") || strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine"):
			t.Errorf("workspaced %q on a %s disk: %v", f.args, f.fault, f.r)
		}
		seen[f.fault]++
	}
	return seen
}

// mustFail runs a command the test itself runs as an agent on a faulty
// disk and records its failure (checked with the agents'); it fails the
// test if the command succeeds.
func (a *faultAgents) mustFail(t *testing.T, fault string, args ...string) {
	t.Helper()
	r := a.w.Run(args...)
	if r.Code == 0 {
		t.Fatalf("workspaced %q succeeded on a %s disk: %v", args, fault, r)
	}
	a.fail(fault, args, r)
}

// prepareWithOutputs prepares task id with n subtasks, as prepare does,
// and writes the output of each, so that an agent need only claim and
// report it done.
func prepareWithOutputs(t *testing.T, s *sqlite.Store, id string, n int) []string {
	t.Helper()
	subs := prepare(t, s, id, n)
	for _, sub := range subs {
		if _, err := s.WriteOutput(t.Context(), id, sub, "worker", []byte(`{"summary": "done"}`)); err != nil {
			t.Fatal(err)
		}
	}
	return subs
}

// startFaultAgents starts agents workers (worker_0, …) sharing the
// subtasks theirs of task id, and waits until the daemon d has taken
// their first markers.
func startFaultAgents(t *testing.T, w *clitest.WS, s *sqlite.Store, d *clitest.Daemon, id string, theirs []string, agents int) *faultAgents {
	t.Helper()
	a := &faultAgents{w: w, wrote: newWritten()}
	a.setFault("none")
	for i := range agents {
		var share []string
		for k := i; k < len(theirs); k += agents {
			share = append(share, theirs[k])
		}
		a.run(id, fmt.Sprintf("worker_%d", i), share)
	}
	eventually(t, "the first markers taken", func() (bool, string) {
		n := journaled(t, s)
		return n >= 2+6, fmt.Sprintf("%d journal rows; daemon:\n%s", n, d.Log)
	})
	return a
}

// finish starts a new daemon once the disk is writable again, lets agent
// mine finish its reserved subtasks, waits until every subtask of task id
// is completed with no marker waiting, kills the daemon and checks the
// database: integrity, every marker an agent wrote journaled exactly
// once, every subtask completed, each event logged once. It returns the
// journal and the task's state.
func (a *faultAgents) finish(t *testing.T, id, mine string, reserved, subs []string) ([]workspace.JournalRecord, workspace.State) {
	t.Helper()
	s := openStore(t, a.w.Root)
	d := a.w.Serve()
	a.run(id, mine, reserved)
	a.wg.Wait()
	eventually(t, "every subtask completed, no marker waiting", func() (bool, string) {
		if n := waitingMarkers(t, s); n > 0 {
			return false, fmt.Sprintf("%d markers waiting", n)
		}
		st, err := s.ReadState(t.Context(), id)
		return err == nil && st.Status == "completed", fmt.Sprintf("%s (%v)", st.Status, err)
	})
	d.Kill()
	integrity(t, s)
	recs := newTaskCheck(id).check(t, s)
	if n := checkWritten(t, s, id, recs, a.wrote.snapshot()); n != 0 {
		t.Fatalf("%d markers still waiting", n)
	}
	state, err := s.ReadState(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		if ss := state.Subtasks[sub]; ss == nil || ss.Status != machine.SubtaskCompleted {
			t.Fatalf("subtask %s: %+v, want completed", sub, ss)
		}
	}
	clitest.CheckJournalEvents(t, s, id, recs)
	return recs, state
}

// TestDiskFaults: agents claim and finish subtasks with the CLI while the
// daemon serves a database on a small ext4 that fills up and is then
// remounted read-only. The agents' commands fail with an error naming the
// fault and its hint, never "database is locked"; the daemon stops the
// task it cannot commit and status shows it with the fault; once space is
// freed and the filesystem is writable again everything goes on: every
// marker an agent reported written is journaled exactly once, every
// subtask completed, integrity_check ok. Besides the agents' commands,
// which meet the faults when they happen to run then, the test runs
// commands of its own agent (worker_t, subtasks of its own) in each.
func TestDiskFaults(t *testing.T) {
	t.Parallel()
	const (
		id       = "faults"
		subtasks = 66 // the last 6 are worker_t's
		agents   = 3
		mine     = "worker_t"
	)
	mnt := clitest.SmallExt4(t, 32<<20)
	w := clitest.New(t, "sqlite:"+filepath.Join(mnt, "agents.db"))
	s := openStore(t, w.Root)
	subs := prepareWithOutputs(t, s, id, subtasks)
	theirs, reserved := subs[:subtasks-6], subs[subtasks-6:]
	claim := func(sub string) []string { return []string{"claim", "--task", id, "--agent", mine, "--subtask", sub} }
	d := w.Serve()
	a := startFaultAgents(t, w, s, d, id, theirs, agents)

	// The daemon dies while the agents write, a marker of worker_t waits,
	// the disk fills up, and a new daemon meets the full disk.
	d.Kill()
	if err := a.wrote.note("claim", id, reserved[0], path.Base(strings.TrimSpace(w.Ok(claim(reserved[0])...)))); err != nil {
		t.Fatal(err)
	}
	a.pause(t) // commands started before the disk fills may meet it or not
	a.setFault("mending")
	a.paused.Store(false)
	clitest.Fill(t, mnt)
	a.setFault("full")
	a.mustFail(t, "full", claim(reserved[1])...)
	a.mustFail(t, "full", "done", "--task", id, "--agent", mine, "--subtask", reserved[0], "--output", "outputs/"+reserved[0]+".json")
	a.mustFail(t, "full", "env", "store", "--task", id, "--key", "k", "--description", "d", "--value", `"`+strings.Repeat("x", 64<<10)+`"`)
	d = w.Serve()
	eventually(t, "the daemon to say the disk is full", func() (bool, string) {
		l := d.Log.String()
		return strings.Contains(l, `msg="task stopped, retrying" task=`+id) && strings.Contains(l, "no space left on device") &&
			strings.Contains(l, "the filesystem is full"), l
	})
	var st statusJSON
	waitFor(t, w, func(out string) bool {
		st = statusJSON{}
		return json.Unmarshal([]byte(out), &st) == nil && st.Live != nil && len(st.Live.Stopped) == 1
	}, "status", "--json")
	if got := st.Live.Stopped[0]; got.Task != id || got.Fault != workspace.FaultDiskFull ||
		!strings.Contains(got.Error, "no space left on device") || !strings.Contains(got.Hint, "the filesystem is full") {
		t.Fatalf("status --json on the full disk: stopped %+v, want %s stopped as %s with the hint", got, id, workspace.FaultDiskFull)
	}
	if out := w.Ok("status"); !strings.Contains(out, "degraded: task "+id+" stopped since ") || !strings.Contains(out, "no space left on device") ||
		!strings.Contains(out, "the filesystem is full") {
		t.Fatalf("status on the full disk:\n%s", out)
	}

	// Space freed: the daemon's retries go through without a restart.
	a.setFault("mending")
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	syncfs(t, mnt) // ext4 reuses the freed blocks once the journal commits
	a.setFault("none")
	waitFor(t, w, func(out string) bool {
		st = statusJSON{}
		return json.Unmarshal([]byte(out), &st) == nil && st.Live != nil && len(st.Live.Stopped) == 0 && st.MarkersWaiting == 0
	}, "status", "--json")

	// Read-only: no process may hold the database open for writing then,
	// so the daemon is killed (its commits stopped) and the agents wait.
	a.pause(t)
	d.Kill()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	remount(t, mnt, "ro")
	a.setFault("read-only")
	a.paused.Store(false)
	a.mustFail(t, "read-only", claim(reserved[2])...)
	a.mustFail(t, "read-only", "task", "create", "--id", "another", "--description", "d")
	serveFails(t, w, "read-only file system", "hint: the filesystem is mounted read-only")
	// The database was closed cleanly, its log gone: status and reads
	// open it immutable.
	if out := w.Ok("status"); !strings.Contains(out, "degraded: read_only: ") || !strings.Contains(out, "hint: the filesystem is mounted read-only") {
		t.Fatalf("status on the read-only disk:\n%s", out)
	}
	if out := w.Ok("state", "show", "--task", id); !strings.Contains(out, "executing") {
		t.Fatalf("state show on the read-only disk:\n%s", out)
	}
	panel, _ := w.Listen(regexp.MustCompile(`(http://127\.0\.0\.1:\d+)`), "web", "--listen", "127.0.0.1:0", "--read-only")
	panelHas(t, panel+"/api/tasks/"+id+"/state", `"executing"`)
	a.pause(t)
	a.setFault("mending")
	remount(t, mnt, "rw")
	a.setFault("none")
	a.paused.Store(false)

	// Writable again: the agents and a new daemon go on, and worker_t
	// finishes its subtasks.
	recs, state := a.finish(t, id, mine, reserved, subs)
	// The panel opened on the read-only disk reads the commits made since.
	panelHas(t, panel+"/api/tasks/"+id+"/state", `"completed"`)
	seen := checkFailures(t, a.failures())
	if want := fmt.Sprintf("state.json matches the journal (journal_seq %d)", state.JournalSeq); !strings.Contains(w.Ok("state", "rebuild", "--task", id), want) {
		t.Errorf("state rebuild does not match")
	}
	t.Logf("failures by fault: %v; %d markers written, %d journaled", seen, len(a.wrote.snapshot()), len(recs))
}
