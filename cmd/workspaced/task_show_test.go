package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestTaskShowJSONAsEncodingJSON: `task show --json` writes what
// encoding/json writes of its detail, and `state show --json` of its
// state, byte for byte, whatever the state, and fails where encoding/json
// fails.
func TestTaskShowJSONAsEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 1, 1, 0, 0, 0, 123456789, time.FixedZone("", 2*3600))
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	big := &workspace.State{TaskID: "t1", Status: "executing", Subtasks: map[string]*workspace.SubtaskState{},
		Workers: map[string]*workspace.WorkerState{"w1": {Status: "busy", CurrentTask: "st_1"}}, Errors: []workspace.StateError{}}
	for i := range 10000 {
		s := &workspace.SubtaskState{Status: "pending"}
		if i%2 == 0 {
			s = &workspace.SubtaskState{Status: "completed", Worker: "w1", Attempts: 1, StartedAt: &at, CompletedAt: &at,
				Output: fmt.Sprintf("outputs/st_%d.json", i)}
		}
		big.Subtasks[fmt.Sprintf("st_%d", i)] = s
	}
	task := workspace.Task{ID: "t1", Description: "a \"state\": null,\n  \"state\": null,\n", CreatedAt: at,
		Constraints: []string{"<&>"}, SubmittedBy: "human"}
	for name, d := range map[string]taskDetail{
		"no state":        {Task: task, Status: "new"},
		"a state":         {Task: task, Status: "executing", State: &workspace.State{TaskID: "t1", Status: "executing", LastUpdated: at}, PlanVersion: 2, PlanStatus: "approved", EnvKeys: 3, Threads: 1},
		"10,000 subtasks": {Task: task, Status: "executing", State: big, Threads: 4},
		"odd strings": {Task: task, State: &workspace.State{TaskID: "t\"1", Status: "é\u2028\x01", Subtasks: map[string]*workspace.SubtaskState{
			"a\\b": {Status: "x", BlockedBy: []string{"<", ""}, Error: "\xff"}, "n": nil}, Amendment: &workspace.AmendmentState{Version: 3, Added: []string{"st_9"}}}},
		"a time beyond 9999": {Task: task, State: &workspace.State{TaskID: "t1", Subtasks: map[string]*workspace.SubtaskState{"a": {StartedAt: &far}}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var want, got bytes.Buffer
			wantErr := printJSON(&want, d)
			err := printTaskDetail(&got, d)
			if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("error %v, encoding/json's %v", err, wantErr)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("task show --json wrote\n%.3000s\nencoding/json\n%.3000s", got.Bytes(), want.Bytes())
			}
			if d.State == nil {
				return
			}
			want.Reset()
			got.Reset()
			wantErr = printJSON(&want, *d.State)
			err = printStateJSON(&got, d.State)
			if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("state show --json wrote (%v)\n%.3000s\nencoding/json (%v)\n%.3000s", err, got.Bytes(), wantErr, want.Bytes())
			}
		})
	}
}

// TestTaskShowBrokenState: a state.json that is broken, hostile or
// written by hand gets what it got before states were read by
// workspace.QuickState: the same warning, or the same summary where
// encoding/json takes it.
func TestTaskShowBrokenState(t *testing.T) {
	t.Parallel()
	const head = `"task_id":"t1","status":"executing","journal_seq":1`
	deep := strings.Repeat("[", 70) + `"x"` + strings.Repeat("]", 70)
	for _, c := range []struct{ name, doc, warning, status string }{
		{"cut short", `{` + head + `,"subtasks":{"st_1":{"status":"pend`,
			"parse tasks/t1/state.json: invalid JSON: the document ends before it is complete (a truncated file?)", "new"},
		{"trailing data", `{` + head + `} x`, "parse tasks/t1/state.json: trailing data after the JSON document", "new"},
		{"attempts a string", `{` + head + `,"subtasks":{"st_1":{"attempts":"1"}}}`,
			"json: cannot unmarshal string into Go struct field SubtaskState.subtasks.attempts of type int", "new"},
		{"another task's", `{"task_id":"t2","status":"executing","journal_seq":1}`,
			`read tasks/t1/state.json: state of task "t2", not "t1"`, "new"},
		{"a status null", `{"task_id":"t1","status":null,"journal_seq":1}`, "read tasks/t1/state.json: status is missing", "new"},
		{"deeper than the limit", `{` + head + `,"subtasks":{"st_1":{"blocked_by":` + deep + `}}}`,
			"tasks/t1/state.json: parse JSON: nested deeper than 64 levels", "new"},
		{"a time not RFC 3339", `{` + head + `,"subtasks":{"st_1":{"started_at":"2024-01-01 00:00:00"}}}`,
			`parse tasks/t1/state.json: parsing time "2024-01-01 00:00:00"`, "new"},
		{"a subtask null", `{` + head + `,"subtasks":{"st_1":null}}`, `read tasks/t1/state.json: subtask "st_1" is null`, "new"},
		{"an unknown key", `{` + head + `,"owner":"x","subtasks":{"st_1":{"status":"pending"}}}`, "", "1 (1 pending)"},
		{"a subtask twice", `{` + head + `,"subtasks":{"st_1":{"status":"pending"},"st_1":{"status":"failed"}}}`, "", "1 (1 failed)"},
		{"a key in capitals", `{` + head + `,"subtasks":{"st_1":{"Status":"blocked"}}}`, "", "1 (1 blocked)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWS(t)
			w.Task("t1")
			if err := os.WriteFile(filepath.Join(w.Root, "tasks", "t1", "state.json"), []byte(c.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			r := w.Run("task", "show", "t1")
			warned := strings.HasPrefix(r.Stderr, "workspaced: warning: ") && strings.Contains(r.Stderr, c.warning)
			if r.Code != 0 || (c.warning == "" && r.Stderr != "") || (c.warning != "" && !warned) || !strings.Contains(r.Stdout, c.status+"\n") {
				t.Fatalf("task show: exit %d\n%s\n%s\nwant the warning %q and %q", r.Code, r.Stdout, r.Stderr, c.warning, c.status)
			}
		})
	}
}
