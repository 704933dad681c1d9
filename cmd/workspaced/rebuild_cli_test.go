package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// state rebuild exits like diff(1): 0 when state.json matches the journal,
// 1 when it differs or is missing, with --json too.
func TestStateRebuildExitCodes(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t0")
	r := w.Run("state", "rebuild", "--task", "t0")
	if r.Code != exitFailure || !strings.HasPrefix(r.Stdout, "no state.json yet; the journal gives (journal_seq 0):\n") || r.Stderr != "" {
		t.Fatalf("no state.json: %v", r)
	}
	srv := w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"}`)
	srv.Stop()
	if out := w.Ok("state", "rebuild", "--task", "t1"); out != "state.json matches the journal (journal_seq 2)\n" {
		t.Errorf("matching state: %q", out)
	}
	var st workspace.State
	clitest.Decode(t, w.Ok("state", "rebuild", "--task", "t1", "--json"), &st)
	if st.Status != "executing" || st.JournalSeq != 2 {
		t.Errorf("rebuilt state: %+v", st)
	}
	// A state.json that says something the journal does not.
	p := filepath.Join(w.Root, "tasks", "t1", "state.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), `"revision_count": 0`, `"revision_count": 5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = w.Run("state", "rebuild", "--task", "t1")
	if r.Code != exitFailure || !strings.Contains(r.Stdout, "\n-  \"revision_count\": 5,\n") || !strings.Contains(r.Stdout, "\n+  \"revision_count\": 0,\n") || r.Stderr != "" {
		t.Errorf("differing state: %v", r)
	}
	r = w.Run("state", "rebuild", "--task", "t1", "--json")
	if r.Code != exitFailure || !strings.Contains(r.Stdout, `"revision_count": 0`) {
		t.Errorf("differing state --json: %v", r)
	}
	w.Fails(exitNotFound, "no such task", "state", "rebuild", "--task", "nope")
}

// A task retention summarised has no journal left: rebuild says so and
// checks what is left; backup list says why it has no backups.
func TestSummarisedTaskRebuildAndBackups(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t0")
	if out := w.Ok("backup", "list", "--task", "t0"); out != "no backups of task t0: the daemon has not written its state.json yet (is one serving? see 'workspaced status')\n" {
		t.Errorf("backup list before any state: %q", out)
	}
	srv := w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"}`)
	w.Ok("task", "cancel", "--task", "t1", "--reason", "done with it", "--wait")
	w.Task("t2")
	x := w.Open()
	clitest.StateWhere(t, x, "t2", func(st workspace.State) bool { return st.Status == "planning" })
	srv.Stop()
	if out := w.Ok("backup", "list", "--task", "t2"); !strings.Contains(out, "state.json has not been replaced since the daemon first wrote it") {
		t.Errorf("backup list after one state write: %q", out)
	}
	backups := filepath.Join(w.Root, "tasks", "t1", "backups")
	ents, err := os.ReadDir(backups)
	if err != nil || len(ents) == 0 {
		t.Fatalf("t1 has no backups to remove: %v", err)
	}
	for _, e := range ents {
		os.Remove(filepath.Join(backups, e.Name()))
	}
	if out := w.Ok("backup", "list", "--task", "t1"); !strings.Contains(out, "tasks/t1/backups/ is empty, though the daemon keeps one before every state write: were they removed by hand?") {
		t.Errorf("backup list after removing them: %q", out)
	}
	if out := w.Ok("cleanup", "--full-days", "0", "--summary-days", "30"); !strings.Contains(out, "t1") {
		t.Fatalf("cleanup: %q", out)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", "t1", "journal")); !os.IsNotExist(err) {
		t.Fatalf("t1 was not summarised: %v", err)
	}
	out := w.Ok("state", "rebuild", "--task", "t1")
	for _, want := range []string{
		"task t1 is summarised: retention kept only task.json, state.json and events.log,",
		"so its journal is gone and the state cannot be rebuilt from it",
		"state.json  valid: cancelled, journal_seq 3",
		"events.log  ends the task with task_cancelled",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rebuild of a summarised task lacks %q:\n%s", want, out)
		}
	}
	var c service.SummaryCheck
	clitest.Decode(t, w.Ok("state", "rebuild", "--task", "t1", "--json"), &c)
	if !c.Summarised || !c.StateValid || !c.EventsAgree || c.Status != "cancelled" || c.FinalEvent != "task_cancelled" || len(c.Problems) != 0 {
		t.Errorf("summary check: %+v", c)
	}
	if out := w.Ok("backup", "list", "--task", "t1"); out != "no backups of task t1: the task is cancelled and summarised: retention kept only task.json, state.json and events.log\n" {
		t.Errorf("backup list of a summarised task: %q", out)
	}
	if out := w.Ok("backup", "list", "--task", "t1", "--json"); out != "[]\n" {
		t.Errorf("backup list --json: %q", out)
	}

	// What is left, broken: the events do not end the task.
	events := filepath.Join(w.Root, "tasks", "t1", "events.log")
	logData, _ := os.ReadFile(events)
	var kept []string
	for _, l := range strings.SplitAfter(string(logData), "\n") {
		if !strings.Contains(l, "task_cancelled") {
			kept = append(kept, l)
		}
	}
	os.WriteFile(events, []byte(strings.Join(kept, "")), 0o644)
	r := w.Run("state", "rebuild", "--task", "t1")
	if r.Code != exitFailure || !strings.Contains(r.Stdout, "PROBLEM     events.log: want task_cancelled, the last event ending the task is none") {
		t.Errorf("events without the end: %v", r)
	}
	// The events end the task, but state.json does not parse.
	os.WriteFile(events, logData, 0o644)
	os.WriteFile(filepath.Join(w.Root, "tasks", "t1", "state.json"), []byte(`{"task_id": "t1", "status": "cancel`), 0o644)
	r = w.Run("state", "rebuild", "--task", "t1", "--json")
	clitest.Decode(t, r.Stdout, &c)
	if r.Code != exitFailure || c.StateValid || len(c.Problems) == 0 {
		t.Errorf("a broken summarised state.json: %v", r)
	}
}
