package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// executingCLI brings task id to executing through the CLI alone, with a
// running daemon: a plan of the given subtasks (JSON array items),
// proposed and approved, each step waited for.
func (w *ws) executingCLI(id, subtasks string) {
	w.T.Helper()
	w.Task(id)
	plan := `{"summary":"the plan","subtasks":[` + subtasks + `]}`
	if r := w.RunIn(plan, "plan", "write", "--task", id, "--file", "-", "--agent", "planner"); r.Code != 0 {
		w.T.Fatalf("plan write: %v", r)
	}
	w.Ok("done", "--task", id, "--agent", "planner", "--output", "plan.json", "--wait", "30s")
	if r := w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", id, "--id", "plan_v1", "--agent", "reviewer", "--file", "-"); r.Code != 0 {
		w.T.Fatalf("review write: %v", r)
	}
	out := w.Ok("done", "--task", id, "--agent", "reviewer", "--output", "reviews/plan_v1.json", "--wait")
	if !strings.Contains(out, "applied (journal seq 2); task "+id+" is executing") {
		w.T.Fatalf("plan approval: %q", out)
	}
}

func verdictOf(t *testing.T, out string) verdictOut {
	t.Helper()
	var v verdictOut
	clitest.Decode(t, out, &v)
	return v
}

// claim and done --wait give the daemon's verdict in the exit code: won
// or applied 0, lost or refused 4, no such subtask 3.
func TestClaimDoneWaitVerdicts(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t0")
	before := w.Tree()
	r := w.Fails(exitFailure, "no daemon serves", "claim", "--task", "t0", "--agent", "w1", "--subtask", "st_1", "--wait")
	if !strings.Contains(r.Stderr, "nothing was dropped") || !strings.Contains(r.Stderr, "hint: start the daemon (workspaced serve)") {
		t.Errorf("no daemon: %v", r)
	}
	w.Fails(exitFailure, "no daemon serves", "done", "--task", "t0", "--agent", "w1", "--status", "cancelled", "--wait", "5s")
	clitest.SameTree(t, before, w.Tree(), "--wait with no daemon")

	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"},{"id":"st_2","description":"b","dependencies":["st_1"]}`)

	out := w.Ok("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1", "--wait")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], filepath.Join(w.Root, "tasks", "t1", ".claim.w1.")) ||
		lines[1] != "won (journal seq 3); subtask st_1 is in_progress with w1; task t1 is executing" {
		t.Errorf("won claim printed %q", out)
	}
	reusedNameVerdict(t, w, "t1", filepath.Base(lines[0]), 3)
	w.Fails(exitConflict, "lost: subtask st_1 already taken by w1 (journal seq 4)", "claim", "--task", "t1", "--agent", "w2", "--subtask", "st_1", "--wait", "30s")
	w.Fails(exitConflict, "lost: subtask st_2 is blocked by st_1", "claim", "--task", "t1", "--agent", "w2", "--subtask", "st_2", "--wait=30s")

	r = w.Run("claim", "--task", "t1", "--agent", "w2", "--subtask", "st_9", "--wait", "--json")
	if r.Code != exitNotFound || !strings.Contains(r.Stderr, "not_found: unknown subtask st_9") || !strings.Contains(r.Stderr, "hint: the approved plan has no such subtask") {
		t.Fatalf("claim of st_9: %v", r)
	}
	if v := verdictOf(t, r.Stdout); v.Verdict.Verdict != workspace.VerdictNotFound || v.Kind != "claim" || v.SubtaskID != "st_9" || v.Seq != 6 ||
		!strings.HasPrefix(v.MarkerPath, filepath.Join(w.Root, "tasks", "t1", ".claim.w2.")) || v.Marker != filepath.Base(v.MarkerPath) {
		t.Errorf("claim of st_9 --json: %+v", v)
	}

	// done: refused for a subtask another agent holds; applied for the holder.
	if r := w.RunIn(`{"summary":"by w1"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-"); r.Code != 0 {
		t.Fatal(r)
	}
	w.Fails(exitConflict, "refused: subtask st_1 is taken by w1, not w2", "done", "--task", "t1", "--agent", "w2", "--output", "outputs/st_1.json", "--wait")
	r = w.Run("done", "--task", "t1", "--agent", "w1", "--output", "outputs/st_1.json", "--wait", "--json")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("done by the holder: %v", r)
	}
	if v := verdictOf(t, r.Stdout); v.Verdict.Verdict != workspace.VerdictApplied || v.SubtaskStatus != "completed" || v.Worker != "w1" || v.Kind != "done" || v.TaskStatus != "executing" {
		t.Errorf("done --json: %+v", v)
	}
	w.Fails(exitConflict, "refused: subtask st_1 already completed by w1", "done", "--task", "t1", "--agent", "w1", "--output", "outputs/st_1.json", "--subtask", "st_1", "--wait")

	// Many agents race for st_2: exactly one wins, every other one knows it lost.
	const racers = 6
	results := make([]clitest.Result, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := w.Exec("", "claim", "--task", "t1", "--agent", "racer_"+string(rune('a'+i)), "--subtask", "st_2", "--wait", "60s")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	won := 0
	for _, r := range results {
		switch r.Code {
		case 0:
			won++
		case exitConflict:
			if !strings.Contains(r.Stderr, "lost: subtask st_2 already taken by racer_") {
				t.Errorf("a racer lost without saying to whom: %v", r)
			}
		default:
			t.Errorf("a racer got neither won nor lost: %v", r)
		}
	}
	if won != 1 {
		t.Errorf("%d racers won st_2, want exactly 1", won)
	}

	// Usage: a bare number is not a duration.
	r = w.Run("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_2", "--wait", "5")
	if r.Code != exitUsage || !strings.Contains(r.Stderr, "hint: write --wait 5s for 5 seconds") {
		t.Errorf("--wait 5: %v", r)
	}
}

// A finished task takes no claim and no done marker: exit 4 at once,
// nothing dropped, with or without --wait.
func TestMarkersRefusedOnFinishedTask(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"}`)
	w.Ok("done", "--task", "t1", "--agent", "human", "--status", "cancelled", "--error", "not needed", "--wait")
	w.settled()
	before := w.Tree()
	for _, args := range [][]string{
		{"claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1"},
		{"claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1", "--wait"},
		{"done", "--task", "t1", "--agent", "w1", "--status", "cancelled"},
		{"done", "--task", "t1", "--agent", "w1", "--status", "cancelled", "--wait", "--json"},
	} {
		r := w.Run(args...)
		if r.Code != exitConflict || !strings.Contains(r.Stderr, "task t1 is cancelled: the daemon takes nothing more for it") || r.Stdout != "" {
			t.Errorf("%q: %v", args, r)
		}
	}
	clitest.SameTree(t, before, w.Tree(), "markers on a finished task")
}

// While waiting, a daemon that goes away, or one that does not decide in
// time, ends the wait with exit 1 and says where the marker is; the marker
// stays for the next daemon.
func TestClaimWaitWithoutVerdict(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	// A process holding the daemon's lock, as a daemon that takes nothing.
	lk, err := locking.TryAcquire(files.LockPath(w.Root), locking.Options{Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r := w.Run("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1", "--wait", "300ms")
	clitest.CheckFailure(t, r, exitFailure, "no verdict within 300ms: the marker is waiting in the task directory", nil)
	if !strings.Contains(r.Stderr, "hint: the marker stays and the daemon decides it") {
		t.Errorf("no hint: %v", r)
	}

	type outcome struct {
		r   clitest.Result
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		r, err := w.Exec("", "claim", "--task", "t1", "--agent", "w2", "--subtask", "st_1", "--wait", "2m")
		ch <- outcome{r, err}
	}()
	// Let go of the lock once the second claim's marker is down.
	clitest.Eventually(t, "two claims in the task directory", func() (bool, string) {
		ents, _ := os.ReadDir(filepath.Join(w.Root, "tasks", "t1"))
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".claim.") {
				n++
			}
		}
		return n == 2, "claims: " + string(rune('0'+n))
	})
	lk.Release()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		clitest.CheckFailure(t, o.r, exitFailure, "no daemon serves", nil)
		if !strings.Contains(o.r.Stderr, "the marker is waiting in the task directory") {
			t.Errorf("where the marker is: %v", o.r)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("claim --wait did not notice the daemon was gone")
	}
	// The next daemon takes both claims: the first one wins.
	w.serve()
	x := w.Open()
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == 2 })
}

// Work is never lost through the CLI: an output is rewritten only while
// its subtask is open (every replaced version kept), never once it is
// completed; a review never once reported; and a body cannot rename what
// it is for.
func TestOutputAndReviewNeverLost(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a","max_retries":1},{"id":"st_2","description":"b"}`)
	outputs := filepath.Join(w.Root, "tasks", "t1", "outputs")
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(outputs, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	// w1 drafts twice, fails; w2 retries and finishes.
	w.Ok("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1", "--wait")
	for _, body := range []string{`{"summary":"draft"}`, `{"status":"failed","error":"tests fail"}`} {
		if r := w.RunIn(body, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-"); r.Code != 0 {
			t.Fatal(r)
		}
	}
	failed := read("st_1.json")
	out := w.Ok("done", "--task", "t1", "--agent", "w1", "--output", "outputs/st_1.json", "--status", "failed", "--error", "tests fail", "--wait")
	if !strings.Contains(out, "applied (journal seq 4); subtask st_1 is pending") {
		t.Errorf("failed attempt: %q", out)
	}
	w.Ok("claim", "--task", "t1", "--agent", "w2", "--subtask", "st_1", "--wait")
	if r := w.RunIn(`{"summary":"done right"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w2", "--file", "-", "--done"); r.Code != 0 {
		t.Fatal(r)
	}
	if got := read("history/st_1.v2.json"); got != failed {
		t.Errorf("the failed attempt's output was not kept: %s", got)
	}
	if got := read("history/st_1.v1.json"); !strings.Contains(got, `"summary": "draft"`) {
		t.Errorf("the draft was not kept: %s", got)
	}
	x := w.Open()
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Subtasks["st_1"].Status == "completed" })

	// Completed: final.
	final := read("st_1.json")
	w.settled()
	before := w.Tree()
	r := w.RunIn(`{"summary":"sneaky"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w2", "--file", "-")
	clitest.CheckFailure(t, r, exitConflict, "subtask st_1 was completed by w2; its output is final", nil)
	if read("st_1.json") != final {
		t.Error("the final output changed")
	}
	clitest.SameTree(t, before, w.Tree(), "a refused output write")

	// A body that contradicts the flags names both values.
	r = w.RunIn(`{"subtask_id":"st_1","summary":"x"}`, "output", "write", "--task", "t1", "--subtask", "st_2", "--agent", "w2", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, `the document says subtask_id "st_1", but the subtask it is written for is "st_2"`, nil)
	r = w.RunIn(`{"worker_id":"w9"}`, "output", "write", "--task", "t1", "--subtask", "st_2", "--agent", "w2", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, `the document says worker_id "w9", but the agent writing it is "w2"`, nil)
	r = w.RunIn(`{"id":"other","type":"output_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "r1", "--file", "-")
	clitest.CheckFailure(t, r, exitFailure, `the document says id "other", but the review id it is written as is "r1"`, nil)
	clitest.SameTree(t, before, w.Tree(), "refused bodies")

	// A review: rewritable until reported (kept), final after.
	for _, verdict := range []string{"rejected", "approved"} {
		if r := w.RunIn(`{"type":"output_review","target":"st_1","verdict":"`+verdict+`"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-"); r.Code != 0 {
			t.Fatal(r)
		}
	}
	kept, err := os.ReadFile(filepath.Join(w.Root, "tasks", "t1", "reviews", "history", "r1.v1.json"))
	if err != nil || !strings.Contains(string(kept), `"verdict": "rejected"`) {
		t.Errorf("replaced review not kept: %v %s", err, kept)
	}
	w.Ok("done", "--task", "t1", "--agent", "rev", "--output", "reviews/r1.json", "--wait")
	r = w.RunIn(`{"type":"output_review","target":"st_1","verdict":"rejected"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-")
	clitest.CheckFailure(t, r, exitConflict, "write review reviews/r1.json: it was reported (journal record", nil)
	if !strings.Contains(r.Stderr, "hint: a reported review is final; write the new decision as a review with a new id") {
		t.Errorf("hint: %v", r)
	}
	// The kept versions are valid files of the tree.
	if got := w.Ok("validate"); !strings.HasPrefix(got, "ok ") {
		t.Errorf("validate: %q", got)
	}
}

// task cancel ends a task through a marker the daemon applies, with or
// without waiting; a finished task is not cancelled again.
func TestTaskCancel(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	// No daemon yet: the marker waits for one.
	out := strings.TrimSpace(w.Ok("task", "cancel", "--task", "t1", "--reason", "the requirement was dropped"))
	data, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(out, filepath.Join(w.Root, "tasks", "t1", ".done.human.")) ||
		!strings.Contains(string(data), `"status": "cancelled"`) || !strings.Contains(string(data), `"error": "the requirement was dropped"`) {
		t.Fatalf("cancel marker %s: %v %s", out, err, data)
	}
	w.serve()
	x := w.Open()
	st := clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Status == "cancelled" })
	if st.Phase != "cancelled" || st.CompletedAt == nil {
		t.Errorf("cancelled state: %+v", st)
	}
	// The commit's events are in events.log before its state (the daemon appends them first).
	clitest.Eventually(t, "the task_cancelled event", func() (bool, string) {
		ev := w.Ok("events", "--task", "t1")
		return strings.Contains(ev, `task_cancelled t1 agent=human reason="the requirement was dropped"`), ev
	})
	before := w.Tree()
	w.Fails(exitConflict, "task t1 is cancelled: the daemon takes nothing more for it", "task", "cancel", "--task", "t1")
	clitest.SameTree(t, before, w.Tree(), "cancelling a cancelled task")

	// An executing task with work in progress, cancelled by its thread and
	// waited for.
	w.executingCLI("t2", `{"id":"st_1","description":"a"}`)
	w.Ok("claim", "--task", "t2", "--agent", "w1", "--subtask", "st_1", "--wait")
	w.Ok("thread", "new", "--task", "t2", "--id", "th_w", "--from", "coordinator", "--to", "w1", "--message", "do st_1")
	r := w.Run("task", "cancel", "--thread", "th_w", "--agent", "coordinator", "--wait", "--json")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("cancel --wait: %v", r)
	}
	v := verdictOf(t, r.Stdout)
	if v.Verdict.Verdict != workspace.VerdictApplied || v.TaskStatus != "cancelled" || v.TaskID != "t2" || v.Kind != "done" {
		t.Errorf("cancel verdict: %+v", v)
	}
	st = clitest.StateWhere(t, x, "t2", func(st workspace.State) bool { return st.Status == "cancelled" })
	if wk := st.Workers["w1"]; wk == nil || wk.Status != "available" {
		t.Errorf("worker of a cancelled task: %+v", wk)
	}
	w.Fails(exitConflict, "task t2 is cancelled", "claim", "--task", "t2", "--agent", "w2", "--subtask", "st_1", "--wait")
	w.Fails(exitNotFound, "no such task", "task", "cancel", "--task", "nope")
	w.Fails(exitUsage, "missing --task", "task", "cancel")
}

// TestLostRaceIsNoTaskError: a claim that loses a race is the verdict on
// its marker, not an error of the task: task show and state show count it
// apart from the errors, while the verdict still reads lost with its
// reason.
func TestLostRaceIsNoTaskError(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.serve()
	x := w.Open()
	w.ProposePlan(x, "t1", "d", 2, false)
	w.OkIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "executing" })
	w.Ok("claim", "--task", "t1", "--subtask", "st_2", "--agent", "py_1", "--wait")
	r := w.Run("claim", "--task", "t1", "--subtask", "st_2", "--agent", "py_2", "--wait", "--json")
	if r.Code != exitConflict || !strings.Contains(r.Stdout, `"verdict": "lost"`) || !strings.Contains(r.Stdout, "already taken by py_1") {
		t.Fatalf("the second claim: want exit %d, lost, already taken by py_1: %v", exitConflict, r)
	}
	show := w.Ok("task", "show", "--task", "t1")
	if strings.Contains(show, "errors:") || !strings.Contains(show, "claims refused:  1 ") {
		t.Errorf("task show counts the lost race as an error, or not as a refused claim:\n%s", show)
	}
	state := w.Ok("state", "show", "--task", "t1")
	if strings.Contains(state, "Errors (") || !strings.Contains(state, "Claims refused (1):") || !strings.Contains(state, "py_2 st_2: subtask st_2 already taken by py_1") {
		t.Errorf("state show:\n%s", state)
	}
}

// settled waits until the daemon has settled every commit: no taken
// marker is left in a journal (it removes them after the verdicts are
// readable), so a picture of the tree taken next stays as it is.
func (w *ws) settled() {
	w.T.Helper()
	clitest.Eventually(w.T, "the daemon settled its commits", func() (bool, string) {
		taken, _ := filepath.Glob(filepath.Join(w.Root, "tasks", "*", "journal", "*.taken.*"))
		return len(taken) == 0, strings.Join(taken, "\n")
	})
}
