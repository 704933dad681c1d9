package sqlite_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// waitFor runs `workspaced ARGS` until ok holds of its stdout, for up to
// 60 s, and returns that stdout.
func waitFor(t *testing.T, w *clitest.WS, ok func(string) bool, args ...string) string {
	t.Helper()
	var last clitest.Result
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = w.Run(args...)
		if ok(last.Stdout) {
			return last.Stdout
		}
	}
	t.Fatalf("workspaced %q never gave what was awaited; last: %v", args, last)
	return ""
}

// waitState waits until the state of task id satisfies ok.
func waitState(t *testing.T, w *clitest.WS, id string, ok func(workspace.State) bool) workspace.State {
	t.Helper()
	var st workspace.State
	waitFor(t, w, func(out string) bool {
		st = workspace.State{}
		return json.Unmarshal([]byte(out), &st) == nil && ok(st)
	}, "state", "show", "--task", id, "--json")
	return st
}

// runFlow takes task id through a plan, its review and one subtask done,
// with the daemon serving.
func runFlow(t *testing.T, w *clitest.WS, id string) workspace.State {
	t.Helper()
	plan := `{"summary":"two steps","subtasks":[{"id":"s1","description":"one","estimated_complexity":"low"},{"id":"s2","description":"two","estimated_complexity":"low"}]}`
	w.RunIn(plan, "plan", "write", "--task", id, "--agent", "planner", "--file", "-", "--propose")
	waitState(t, w, id, func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", id, "--id", "plan_v1", "--agent", "reviewer", "--file", "-", "--done")
	waitState(t, w, id, func(st workspace.State) bool { return st.Status == "executing" })
	w.Ok("claim", "--task", id, "--subtask", "s1", "--agent", "w1")
	w.RunIn(`{"summary":"done one"}`, "output", "write", "--task", id, "--subtask", "s1", "--agent", "w1", "--file", "-", "--done")
	return waitState(t, w, id, func(st workspace.State) bool {
		return st.Subtasks["s1"] != nil && st.Subtasks["s1"].Status == "completed"
	})
}

// openDB opens the workspace's database in the test, beside the CLI.
func openDB(t *testing.T, root string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// statusJSON is what the tests read of status --json.
type statusJSON struct {
	Root           string         `json:"root"`
	Serving        bool           `json:"serving"`
	PID            int            `json:"pid"`
	ByStatus       map[string]int `json:"by_status"`
	MarkersWaiting int            `json:"markers_waiting"`
	Tasks          []struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		JournalSeq int64  `json:"journal_seq"`
	} `json:"tasks"`
	Live *workspace.Live `json:"live"`
}

// TestStatusAndRebuild: status names the daemon holding PATH.lock, counts
// the tasks and the markers waiting; state rebuild folds the journal
// through the state machine and matches the state the daemon wrote, and
// tells a tampered state apart with a diff.
func TestStatusAndRebuild(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	if out := w.Ok("status"); !strings.Contains(out, "daemon: no daemon serving "+w.Root) || !strings.Contains(out, "tasks: 1 (none 1)") {
		t.Errorf("status with no daemon:\n%s", out)
	}
	d := w.Serve()
	st := runFlow(t, w, "t1")

	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "state.json matches the journal (journal_seq "+strconv.FormatInt(st.JournalSeq, 10)+")") {
		t.Errorf("state rebuild: %s", out)
	}
	w.Fails(3, "no such task", "state", "rebuild", "--task", "nope")
	if out := w.Ok("state", "show", "--task", "t1"); !strings.Contains(out, "status:       executing") || !strings.Contains(out, "s1") {
		t.Errorf("state show:\n%s", out)
	}

	out := w.Ok("status")
	pid := strconv.Itoa(d.Cmd.Process.Pid)
	for _, want := range []string{"daemon: serving " + w.Root + " (pid " + pid + ", since ", "tasks: 1 (executing 1)", "markers waiting: 0", "last rescan: ", "wake-ups: "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var s statusJSON
	clitest.Decode(t, w.Ok("status", "--json"), &s)
	if !s.Serving || s.PID != d.Cmd.Process.Pid || s.Root != w.Root || s.ByStatus["executing"] != 1 || len(s.Tasks) != 1 ||
		s.Tasks[0].JournalSeq != st.JournalSeq || s.Live == nil || s.Live.PID != d.Cmd.Process.Pid || len(s.Live.Stopped) != 0 {
		t.Errorf("status --json: %+v", s)
	}

	db := openDB(t, w.Root)
	if _, err := db.DB().Exec(`UPDATE states SET doc = replace(doc, '"w1"', '"someone"') WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	r := w.Run("state", "rebuild", "--task", "t1")
	if r.Code != 1 || !strings.Contains(r.Stdout, "--- state of task t1") || !strings.Contains(r.Stdout, "\n-") || !strings.Contains(r.Stdout, `someone`) {
		t.Errorf("state rebuild of a tampered state: want exit 1 and a diff: %v", r)
	}
	if r := w.Run("state", "rebuild", "--task", "t1", "--json"); r.Code != 1 || !strings.Contains(r.Stdout, `"worker": "w1"`) {
		t.Errorf("state rebuild --json of a tampered state: want exit 1 and the rebuilt state: %v", r)
	}
	d.Kill()
	if out := w.Ok("status"); !strings.Contains(out, "daemon: no daemon serving") {
		t.Errorf("status after the daemon died:\n%s", out)
	}
}

// TestStatusShowsStoreFault: a commit the database refuses stops the
// task; status shows it as degraded with the error and the retries, as
// for a directory, and clears it once the commits go through again.
func TestStatusShowsStoreFault(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve()
	waitState(t, w, "t1", func(st workspace.State) bool { return st.Status != "" })
	db := openDB(t, w.Root)
	if _, err := db.DB().Exec(`CREATE TRIGGER refuse_states BEFORE INSERT ON state_history BEGIN SELECT RAISE(ABORT, 'no room for the state'); END`); err != nil {
		t.Fatal(err)
	}
	w.Ok("claim", "--task", "t1", "--subtask", "s1", "--agent", "w1")
	var s statusJSON
	waitFor(t, w, func(out string) bool {
		s = statusJSON{}
		return json.Unmarshal([]byte(out), &s) == nil && s.Live != nil && len(s.Live.Stopped) == 1 && s.Live.Stopped[0].Retries >= 1
	}, "status", "--json")
	if got := s.Live.Stopped[0]; got.Task != "t1" || !strings.Contains(got.Error, "no room for the state") || got.Fault != workspace.FaultOther {
		t.Errorf("stopped: %+v", got)
	}
	if s.MarkersWaiting != 1 {
		t.Errorf("markers waiting %d, want 1", s.MarkersWaiting)
	}
	if out := w.Ok("status"); !strings.Contains(out, "degraded: task t1 stopped since ") || !strings.Contains(out, "no room for the state") {
		t.Errorf("status of a stopped task:\n%s", out)
	}
	if _, err := db.DB().Exec(`DROP TRIGGER refuse_states`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, func(out string) bool {
		s = statusJSON{}
		return json.Unmarshal([]byte(out), &s) == nil && s.Live != nil && len(s.Live.Stopped) == 0 && s.MarkersWaiting == 0
	}, "status", "--json")
	if out := w.Ok("status"); strings.Contains(out, "degraded") {
		t.Errorf("status once the commits go through:\n%s", out)
	}
}
