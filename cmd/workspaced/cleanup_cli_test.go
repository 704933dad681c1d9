package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// taskInfo is what retention reads from g's task directory.
func taskInfo(g clitest.GenTask, now time.Time) retention.TaskInfo {
	ti := retention.TaskInfo{ID: g.ID, Status: g.Status, Summarized: g.Summarized}
	finished := g.Status == vocab.StatusCompleted || g.Status == vocab.StatusFailed || g.Status == vocab.StatusCancelled
	if finished && !g.NoCompletedAt {
		ti.CompletedAt = now.Add(-g.Age).UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	return ti
}

// pathInfo is one path of a listing: its kind, size and content hash.
type pathInfo struct {
	Dir  bool
	Size int64
	Hash string
}

// treeListing lists every file and directory under dir with size and content
// hash, leaving out lock files (.locks/ directories: made on demand and
// never deleted, they hold no data).
func treeListing(t testing.TB, dir string) map[string]pathInfo {
	t.Helper()
	out := map[string]pathInfo{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".locks" {
				return filepath.SkipDir
			}
			out[rel+"/"] = pathInfo{Dir: true}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = pathInfo{Size: int64(len(data)), Hash: hex.EncodeToString(sum[:])}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffListings describes how two listings differ, or returns "".
func diffListings(before, after map[string]pathInfo) string {
	var diff []string
	for k, v := range after {
		if b, ok := before[k]; !ok {
			diff = append(diff, "+ "+k)
		} else if b != v {
			diff = append(diff, "~ "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, "- "+k)
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, "\n")
}

// subtree returns the entries of l under prefix (a directory, with its
// slash), relative to it.
func subtree(l map[string]pathInfo, prefix string) map[string]pathInfo {
	out := map[string]pathInfo{}
	for k, v := range l {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// startDaemon starts `workspaced serve` on w's root and waits until it
// logs that its start-up scan is done (at debug level: "msg=scanned"), so
// whatever the scan writes (a state.json for a task without one, lock
// files) is written before the test looks. The test's cleanup stops it
// with SIGTERM and fails unless it exits 0.
func startDaemon(t *testing.T, w *ws, args ...string) *clitest.Daemon {
	t.Helper()
	cmd := clitest.Command(append([]string{"serve", "--log-level", "debug"}, args...)...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	d := w.StartCmd(cmd)
	t.Cleanup(d.Stop)
	clitest.Eventually(t, "the daemon's start-up scan (msg=scanned)", func() (bool, string) {
		if !d.Running() {
			t.Fatalf("workspaced serve exited before its start-up scan was done:\n%s", d.Log)
		}
		return strings.Contains(d.Log.String(), "msg=scanned"), clitest.TailLines(d.Log.String(), 5)
	})
	return d
}

// alive fails the test if the daemon has exited.
func alive(t *testing.T, d *clitest.Daemon) {
	t.Helper()
	if !d.Running() {
		t.Fatalf("the daemon exited:\n%s", d.Log)
	}
}

// e2eTasks is a tree of tasks of many ages and statuses, none near a
// policy boundary (so a test taking seconds cannot move one across).
func e2eTasks() []clitest.GenTask {
	const day = 24 * time.Hour
	var gs []clitest.GenTask
	ages := []time.Duration{0, 2 * time.Hour, 3 * day, 6*day + 12*time.Hour, 7*day + 12*time.Hour, 15 * day,
		29*day + 12*time.Hour, 30*day + 12*time.Hour, 90 * day, 400 * day}
	for i, age := range ages {
		for _, st := range []string{vocab.StatusCompleted, vocab.StatusFailed, vocab.StatusCancelled} {
			gs = append(gs, clitest.GenTask{ID: fmt.Sprintf("%s-%02d", st, i), Status: st, Age: age})
		}
	}
	// Active tasks of every age are never touched.
	for i, age := range []time.Duration{time.Hour, 10 * day, 45 * day, 400 * day} {
		gs = append(gs,
			clitest.GenTask{ID: fmt.Sprintf("executing-%02d", i), Status: vocab.StatusExecuting, Age: age},
			clitest.GenTask{ID: fmt.Sprintf("planning-%02d", i), Status: vocab.StatusPlanning, Age: age})
	}
	return append(gs,
		clitest.GenTask{ID: "new-task", Age: 100 * day}, // no state.json yet
		clitest.GenTask{ID: "no-completed-at", Status: vocab.StatusCompleted, Age: 100 * day, NoCompletedAt: true},
		clitest.GenTask{ID: "future", Status: vocab.StatusCompleted, Age: -3 * day}, // clock skew
		clitest.GenTask{ID: "summarized-10", Status: vocab.StatusCompleted, Age: 10 * day, Summarized: true},
		clitest.GenTask{ID: "summarized-40", Status: vocab.StatusFailed, Age: 40 * day, Summarized: true},
	)
}

// TestCleanupEndToEnd runs cleanup over a generated tree with the daemon
// serving the same root the whole time: a dry run changes nothing, a real
// run leaves exactly what the policy decides, and friction about removed
// tasks survives with their ids anonymised.
func TestCleanupEndToEnd(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	now := time.Now()
	gen := e2eTasks()
	for _, g := range gen {
		clitest.WriteGenTask(t, w.Root, g, now)
	}
	infos := make([]retention.TaskInfo, len(gen))
	for i, g := range gen {
		infos[i] = taskInfo(g, now)
	}
	want := retention.Apply(infos, retention.DefaultPolicy(), now)
	byAction := map[retention.Action][]string{}
	for _, d := range want {
		byAction[d.Action] = append(byAction[d.Action], d.TaskID)
	}
	// The tree must exercise every outcome.
	for _, a := range []retention.Action{retention.Keep, retention.Summarize, retention.Remove} {
		if len(byAction[a]) == 0 {
			t.Fatalf("the generated tree has no task to %s", a)
		}
	}
	removedID, keptID := byAction[retention.Remove][0], "executing-03"
	summarizedID := byAction[retention.Summarize][0]

	// Friction naming removed, summarised and kept tasks.
	fr1 := strings.TrimSpace(w.Ok("friction", "add", "--type", "worker_failure", "--task", removedID, "--task", keptID,
		"--description", "solver crashed in "+removedID, "--pattern", "solver crash"))
	fr2 := strings.TrimSpace(w.Ok("friction", "add", "--type", "timeout", "--task", summarizedID,
		"--description", "st_1 of "+summarizedID+" ran long"))
	var allRemoved []string
	for _, id := range byAction[retention.Remove][1:] {
		allRemoved = append(allRemoved, "--task", id)
	}
	fr3 := strings.TrimSpace(w.Ok(append([]string{"friction", "add", "--type", "escalation", "--description", "escalated to a human"}, allRemoved...)...))

	d := startDaemon(t, w)

	before := treeListing(t, w.Root)

	// A dry run changes nothing.
	r := w.Run("cleanup", "--dry-run", "--json")
	if r.Code != 0 {
		t.Fatalf("cleanup --dry-run: %v", r)
	}
	var dry cleanupReport
	clitest.Decode(t, r.Stdout, &dry)
	if !dry.DryRun {
		t.Errorf("dry run report says dry_run false")
	}
	checkReport(t, "dry run", dry, byAction)
	if diff := diffListings(before, treeListing(t, w.Root)); diff != "" {
		t.Fatalf("cleanup --dry-run changed the tree:\n%s", diff)
	}
	text := w.Ok("cleanup", "--dry-run")
	for _, line := range []string{"would remove       " + removedID + ": ", "would summarize    " + summarizedID + ": ", "kept               " + keptID + ": active: status executing"} {
		if !strings.Contains(text, line) {
			t.Errorf("cleanup --dry-run output lacks %q:\n%s", line, text)
		}
	}
	if diff := diffListings(before, treeListing(t, w.Root)); diff != "" {
		t.Fatalf("cleanup --dry-run (text) changed the tree:\n%s", diff)
	}
	alive(t, d)

	// The real run leaves exactly what the policy says.
	r = w.Run("cleanup", "--json")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("cleanup: %v", r)
	}
	var real cleanupReport
	clitest.Decode(t, r.Stdout, &real)
	checkReport(t, "cleanup", real, byAction)
	after := treeListing(t, w.Root)
	for _, dec := range want {
		prefix := "tasks/" + dec.TaskID + "/"
		old, now := subtree(before, prefix), subtree(after, prefix)
		_, exists := after[prefix]
		switch dec.Action {
		case retention.Keep:
			if diff := diffListings(old, now); !exists || diff != "" {
				t.Errorf("kept task %s changed (exists %v):\n%s", dec.TaskID, exists, diff)
			}
		case retention.Summarize:
			wantFiles := map[string]pathInfo{}
			for _, f := range []string{"task.json", "state.json", "events.log"} {
				wantFiles[f] = old[f]
			}
			if diff := diffListings(wantFiles, now); !exists || diff != "" {
				t.Errorf("summarised task %s is not its summary (exists %v):\n%s", dec.TaskID, exists, diff)
			}
		case retention.Remove:
			if exists {
				t.Errorf("removed task %s still exists", dec.TaskID)
			}
		}
	}
	// Nothing else of the tree changed: no leftovers in tasks/, the rest
	// of the root as it was apart from the friction log.
	for k := range after {
		if strings.HasPrefix(k, "tasks/.") {
			t.Errorf("leftover %s", k)
		}
	}
	outside := func(l map[string]pathInfo) map[string]pathInfo {
		m := map[string]pathInfo{}
		for k, v := range l {
			if !strings.HasPrefix(k, "tasks/") && k != friction.File {
				m[k] = v
			}
		}
		return m
	}
	if diff := diffListings(outside(before), outside(after)); diff != "" {
		t.Errorf("cleanup changed files outside tasks/:\n%s", diff)
	}

	// Friction: removed ids anonymised everywhere, the others untouched.
	var e1, e2, e3 friction.Entry
	clitest.Decode(t, w.Ok("friction", "show", fr1, "--json"), &e1)
	clitest.Decode(t, w.Ok("friction", "show", fr2, "--json"), &e2)
	clitest.Decode(t, w.Ok("friction", "show", fr3, "--json"), &e3)
	anon := friction.AnonymizeID(removedID)
	if wantTasks := sortedIDs(anon, keptID); !reflect.DeepEqual(e1.AffectedTasks, wantTasks) {
		t.Errorf("friction %s tasks = %v, want %v", fr1, e1.AffectedTasks, wantTasks)
	}
	if e1.Description != "solver crashed in "+anon {
		t.Errorf("friction %s description = %q, want the removed id anonymised", fr1, e1.Description)
	}
	if !reflect.DeepEqual(e2.AffectedTasks, []string{summarizedID}) || !strings.Contains(e2.Description, summarizedID) {
		t.Errorf("friction %s of a summarised task changed: %+v", fr2, e2)
	}
	var wantAnon []string
	for _, id := range byAction[retention.Remove][1:] {
		wantAnon = append(wantAnon, friction.AnonymizeID(id))
	}
	if !reflect.DeepEqual(e3.AffectedTasks, sortedIDs(wantAnon...)) {
		t.Errorf("friction %s tasks = %v, want every removed id anonymised %v", fr3, e3.AffectedTasks, sortedIDs(wantAnon...))
	}
	if real.FrictionAnonymized != 2 {
		t.Errorf("friction_anonymized = %d, want 2", real.FrictionAnonymized)
	}
	raw, err := os.ReadFile(filepath.Join(w.Root, friction.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range byAction[retention.Remove] {
		if bytes.Contains(raw, []byte(`"`+id+`"`)) || bytes.Contains(raw, []byte(" "+id+`"`)) {
			t.Errorf("friction.json still names removed task %s", id)
		}
	}
	if err := schemas.Validate(schemas.KindFriction, raw); err != nil {
		t.Errorf("friction.json no longer validates: %v", err)
	}

	// A second run finds nothing more to do and changes nothing.
	settled := treeListing(t, w.Root)
	out := w.Ok("cleanup")
	if !strings.Contains(out, fmt.Sprintf("cleanup: %d kept, 0 summarized, 0 removed, 0 skipped", len(byAction[retention.Keep])+len(byAction[retention.Summarize]))) {
		t.Errorf("second cleanup did something:\n%s", out)
	}
	if diff := diffListings(settled, treeListing(t, w.Root)); diff != "" {
		t.Errorf("second cleanup changed the tree:\n%s", diff)
	}

	// The daemon served the whole time and still does.
	alive(t, d)
	if strings.Contains(d.Log.String(), "level=ERROR") {
		t.Errorf("the daemon logged errors:\n%s", d.Log.String())
	}
	d.Stop()
}

func sortedIDs(s ...string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// checkReport compares a cleanup report's lists with the policy's
// decisions (no task is busy in these tests).
func checkReport(t *testing.T, what string, rep cleanupReport, want map[retention.Action][]string) {
	t.Helper()
	ids := func(ds []retention.Decision) []string {
		out := []string{}
		for _, d := range ds {
			if d.Reason == "" {
				t.Errorf("%s: %s has no reason", what, d.TaskID)
			}
			out = append(out, d.TaskID)
		}
		return out
	}
	for _, c := range []struct {
		action retention.Action
		got    []retention.Decision
	}{{retention.Keep, rep.Kept}, {retention.Summarize, rep.Summarized}, {retention.Remove, rep.Removed}} {
		w := sortedIDs(want[c.action]...)
		if w == nil {
			w = []string{}
		}
		if got := ids(c.got); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %s = %v, want %v", what, c.action, got, w)
		}
	}
	if len(rep.Skipped) != 0 || len(rep.Errors) != 0 {
		t.Errorf("%s: skipped %v, errors %v", what, rep.Skipped, rep.Errors)
	}
	if rep.Policy != retention.DefaultPolicy() {
		t.Errorf("%s: policy %+v, want the default", what, rep.Policy)
	}
}

// TestCleanupBusyTask: a task whose lock is held is skipped and reported
// with its holder, left whole, and pruned by a later run.
func TestCleanupBusyTask(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	now := time.Now()
	busy := clitest.GenTask{ID: "old-busy", Status: vocab.StatusCompleted, Age: 60 * 24 * time.Hour}
	idle := clitest.GenTask{ID: "old-idle", Status: vocab.StatusCompleted, Age: 60 * 24 * time.Hour}
	clitest.WriteGenTask(t, w.Root, busy, now)
	clitest.WriteGenTask(t, w.Root, idle, now)
	lk, err := locking.Acquire(context.Background(), filepath.Join(w.Root, "tasks", busy.ID, ".locks", "task.lock"),
		locking.Options{Agent: "worker_7"})
	if err != nil {
		t.Fatal(err)
	}
	before := subtree(treeListing(t, w.Root), "tasks/"+busy.ID+"/")
	for _, dry := range []bool{true, false} {
		args := []string{"cleanup"}
		if dry {
			args = append(args, "--dry-run")
		}
		out := w.Ok(args...)
		wantLine := "skipped            " + busy.ID + ": busy: task lock held by pid " + strconv.Itoa(os.Getpid()) + " (agent worker_7)"
		if !strings.Contains(out, wantLine) {
			t.Errorf("cleanup (dry run %v) does not report the busy task with its holder (%q):\n%s", dry, wantLine, out)
		}
		if !strings.Contains(out, "1 skipped") {
			t.Errorf("cleanup (dry run %v) total does not count the skip:\n%s", dry, out)
		}
		if diff := diffListings(before, subtree(treeListing(t, w.Root), "tasks/"+busy.ID+"/")); diff != "" {
			t.Fatalf("cleanup (dry run %v) touched the busy task:\n%s", dry, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", idle.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the idle task beside the busy one was not removed (%v)", err)
	}
	var rep cleanupReport
	clitest.Decode(t, w.Ok("cleanup", "--dry-run", "--json"), &rep)
	if len(rep.Skipped) != 1 || rep.Skipped[0].TaskID != busy.ID || rep.Skipped[0].Action != retention.Skip ||
		!strings.Contains(rep.Skipped[0].Reason, "worker_7") {
		t.Errorf("--json skipped = %+v, want %s busy with its holder", rep.Skipped, busy.ID)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	out := w.Ok("cleanup")
	if !strings.Contains(out, "removed            "+busy.ID+": ") {
		t.Errorf("once free, the task is not removed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", busy.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tasks/%s still exists (%v)", busy.ID, err)
	}
}

// TestCleanupPolicy: the policy comes from workspace.json, the flags
// override it, and a nonsensical one is refused before anything changes.
func TestCleanupPolicy(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := time.Now()
	tasks := []clitest.GenTask{
		{ID: "d2", Status: vocab.StatusCompleted, Age: 2*day + time.Hour},
		{ID: "d5", Status: vocab.StatusCompleted, Age: 5*day + time.Hour},
		{ID: "d12", Status: vocab.StatusFailed, Age: 12*day + time.Hour},
		{ID: "d40", Status: vocab.StatusCancelled, Age: 40*day + time.Hour},
	}
	cases := []struct {
		name      string
		settings  string // workspace.json retention, "" for the defaults
		args      []string
		code      int
		stderr    string
		kept      []string
		summarize []string
		remove    []string
	}{
		{name: "defaults", kept: []string{"d2", "d5"}, summarize: []string{"d12"}, remove: []string{"d40"}},
		{name: "workspace.json", settings: `{"full_days": 1, "summary_days": 10}`,
			summarize: []string{"d2", "d5"}, remove: []string{"d12", "d40"}},
		{name: "flags override workspace.json", settings: `{"full_days": 1, "summary_days": 10}`, args: []string{"--full-days", "3", "--summary-days", "50"},
			kept: []string{"d2"}, summarize: []string{"d12", "d40", "d5"}},
		{name: "one flag overrides one field", args: []string{"--summary-days", "11"},
			kept: []string{"d2", "d5"}, remove: []string{"d12", "d40"}},
		{name: "full days zero summarises at once", args: []string{"--full-days", "0"},
			summarize: []string{"d12", "d2", "d5"}, remove: []string{"d40"}},
		{name: "summary below full", args: []string{"--full-days", "10", "--summary-days", "5"}, code: 2, stderr: "summary_days 5 is less than full_days 10"},
		{name: "summary zero", args: []string{"--summary-days", "0"}, code: 2, stderr: "would remove every finished task at once"},
		{name: "negative full", args: []string{"--full-days", "-1"}, code: 2, stderr: "full_days -1 is negative"},
		{name: "nonsense in workspace.json", settings: `{"full_days": 20, "summary_days": 10}`, code: 2, stderr: "summary_days 10 is less than full_days 20"},
		{name: "not a number", args: []string{"--full-days", "seven"}, code: 2, stderr: "invalid value"},
		{name: "stray argument", args: []string{"now"}, code: 2, stderr: `unexpected argument "now"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			if c.settings != "" {
				clitest.WriteFileAll(t, filepath.Join(w.Root, "workspace.json"), []byte(`{"retention": `+c.settings+"}\n"))
			}
			for _, g := range tasks {
				clitest.WriteGenTask(t, w.Root, g, now)
			}
			before := treeListing(t, w.Root)
			args := append([]string{"cleanup", "--json"}, c.args...)
			if c.code != 0 {
				w.Fails(c.code, c.stderr, args...)
				if diff := diffListings(before, treeListing(t, w.Root)); diff != "" {
					t.Fatalf("a refused cleanup changed the tree:\n%s", diff)
				}
				return
			}
			var rep cleanupReport
			clitest.Decode(t, w.Ok(args...), &rep)
			got := map[retention.Action][]string{}
			for _, l := range [][]retention.Decision{rep.Kept, rep.Summarized, rep.Removed} {
				for _, d := range l {
					got[d.Action] = append(got[d.Action], d.TaskID)
				}
			}
			for _, x := range []struct {
				a    retention.Action
				want []string
			}{{retention.Keep, c.kept}, {retention.Summarize, c.summarize}, {retention.Remove, c.remove}} {
				if !slices.Equal(got[x.a], x.want) {
					t.Errorf("%s = %v, want %v", x.a, got[x.a], x.want)
				}
			}
		})
	}
}

// TestCleanupErrors: what cleanup refuses, with its exit code.
func TestCleanupErrors(t *testing.T) {
	t.Parallel()
	t.Run("not a workspace", func(t *testing.T) {
		dir := t.TempDir()
		w := &ws{&clitest.WS{T: t, Root: dir, Dir: dir, Env: append(clitest.CleanEnv(), "WORKSPACE_ROOT="+dir)}}
		w.Fails(3, "neither workspace.json nor tasks/", "cleanup", "--dry-run")
	})
	t.Run("another cleanup holds the tree", func(t *testing.T) {
		w := newWS(t)
		clitest.WriteFileAll(t, filepath.Join(w.Root, "workspace.json"), []byte(`{"lock_timeout": "300ms"}`+"\n"))
		clitest.WriteGenTask(t, w.Root, clitest.GenTask{ID: "old", Status: vocab.StatusCompleted, Age: 90 * 24 * time.Hour}, time.Now())
		lk, err := locking.Acquire(context.Background(), filepath.Join(w.Root, "tasks", ".locks", "cleanup.lock"), locking.Options{Agent: "nightly"})
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Release()
		w.Fails(4, "another cleanup is running", "cleanup")
		if _, err := os.Stat(filepath.Join(w.Root, "tasks", "old")); err != nil {
			t.Errorf("the task was touched while another cleanup held the tree: %v", err)
		}
		// A dry run takes no lock and still reports.
		if out := w.Ok("cleanup", "--dry-run"); !strings.Contains(out, "would remove       old: ") {
			t.Errorf("dry run beside a running cleanup:\n%s", out)
		}
	})
	t.Run("help", func(t *testing.T) {
		w := newWS(t)
		out := w.Ok("cleanup", "--help")
		for _, s := range []string{"Examples:", "Exit codes:", "--dry-run", "--full-days", "--summary-days", "--json", "crontab"} {
			if !strings.Contains(out, s) {
				t.Errorf("cleanup --help lacks %q", s)
			}
		}
	})
}

// TestCleanupScale measures cleanup over 1,000 and 10,000 finished tasks of
// five files each: wall time and the subprocess's peak RSS. It is gated
// behind WORKSPACED_SCALE=1 because it writes 55,000 tasks.
func TestCleanupScale(t *testing.T) {
	t.Parallel()
	if os.Getenv("WORKSPACED_SCALE") == "" {
		t.Skip("set WORKSPACED_SCALE=1 to run the 10,000-task cleanup measurement")
	}
	const day = 24 * time.Hour
	type measure struct {
		n      int
		wall   time.Duration
		maxRSS int64 // KiB
	}
	var results []measure
	for _, n := range []int{1000, 10000} {
		w := newWS(t)
		now := time.Now()
		for i := range n {
			// A third each to keep, summarise and remove.
			age := []time.Duration{2 * day, 15 * day, 60 * day}[i%3] + time.Duration(i)*time.Second
			clitest.WriteGenTask(t, w.Root, clitest.GenTask{ID: fmt.Sprintf("task-%05d", i), Status: vocab.StatusCompleted, Age: age}, now)
		}
		cmd := clitest.Command("cleanup")
		cmd.Dir, cmd.Env = w.Dir, w.Env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("cleanup over %d tasks: %v\n%s", n, err, errb.String())
		}
		wall := time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		want := fmt.Sprintf("cleanup: %d kept, %d summarized, %d removed, 0 skipped", (n+2)/3, (n+1)/3, n/3)
		if !strings.Contains(out.String(), want) {
			t.Fatalf("cleanup over %d tasks: want %q in:\n%s", n, want, clitest.TailLines(out.String(), 3))
		}
		results = append(results, measure{n, wall, ru.Maxrss})
		// The load average says how much of the wall time was waiting for
		// a CPU held by something else.
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("cleanup over %d tasks: %v wall, %v user, %v system, max RSS %d KiB (load average %s)",
			n, wall.Round(time.Millisecond), time.Duration(ru.Utime.Nano()).Round(time.Millisecond),
			time.Duration(ru.Stime.Nano()).Round(time.Millisecond), ru.Maxrss, strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	}
	small, big := results[0], results[1]
	// Time is reported, not asserted: the machine is shared and the disk's
	// own delete speed dominates (see the retention benchmark's floor).
	t.Logf("cleanup over %d tasks: %v (target under 10s on a quiet machine)", big.n, big.wall.Round(time.Millisecond))
	// Flat memory: ten times the tasks may not cost much more than the
	// runtime's own noise.
	if float64(big.maxRSS) > 1.5*float64(small.maxRSS) {
		t.Errorf("max RSS grew from %d KiB (%d tasks) to %d KiB (%d tasks)", small.maxRSS, small.n, big.maxRSS, big.n)
	}
}

// TestCleanupAgesForPeople: cleanup --dry-run gives a task finished a
// moment ago its age as people write it ("3s ago"), not as days, hours
// and nanoseconds ("0d0h2m24.601583968s ago").
func TestCleanupAgesForPeople(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.serve()
	x := w.Open()
	w.Ok("task", "create", "--id", "t1", "--description", "d")
	w.Ok("task", "cancel", "--task", "t1", "--reason", "not needed")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "cancelled" })
	out := w.Ok("cleanup", "--dry-run")
	if !regexp.MustCompile(`(?m)^kept +t1: cancelled [0-9]+s ago, younger than full_days [0-9]+$`).MatchString(out) {
		t.Errorf("cleanup --dry-run does not give the age in seconds:\n%s", out)
	}
}
