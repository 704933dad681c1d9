package workspace

import (
	"errors"
	"strings"
	"testing"
)

// TestTaskStateHead: the head of a state.json is read when it parses and
// its task_id, status and journal_seq are there and sound; anything else
// is ErrInvalid, naming what is wrong. What lies beyond the head is not
// checked (that is ReadState's, and validate's, job).
func TestTaskStateHead(t *testing.T) {
	cases := []struct {
		name, data string
		want       StateHead
		err        string // in the error; "" for none
	}{
		{name: "finished", data: `{"task_id":"t1","status":"completed","phase":"done","journal_seq":14,"subtasks":{}}`,
			want: StateHead{TaskID: "t1", Status: "completed", Phase: "done", JournalSeq: 14}},
		{name: "active", data: `{"task_id":"t1","status":"executing","phase":"work","journal_seq":0}`,
			want: StateHead{TaskID: "t1", Status: "executing", Phase: "work"}},
		{name: "beyond the head unchecked", data: `{"task_id":"t1","status":"failed","journal_seq":2,"subtasks":{"st_1":{"status":"exploded"}}}`,
			want: StateHead{TaskID: "t1", Status: "failed", JournalSeq: 2}},
		{name: "torn", data: `{"task_id":"t1","status":"comp`, err: "parse tasks/t1/state.json"},
		{name: "not an object", data: `[]`, err: "parse tasks/t1/state.json"},
		{name: "task_id missing", data: `{"status":"completed","journal_seq":1}`, err: "task_id is missing"},
		{name: "another task", data: `{"task_id":"t2","status":"completed","journal_seq":1}`, err: `state of task "t2", not "t1"`},
		{name: "status missing", data: `{"task_id":"t1","journal_seq":1}`, err: "status is missing"},
		{name: "status unknown", data: `{"task_id":"t1","status":"exploded","journal_seq":1}`, err: `status "exploded" is not a task status`},
		{name: "status not a string", data: `{"task_id":"t1","status":5,"journal_seq":1}`, err: "parse tasks/t1/state.json"},
		{name: "journal_seq missing", data: `{"task_id":"t1","status":"completed"}`, err: "journal_seq is missing"},
		{name: "journal_seq negative", data: `{"task_id":"t1","status":"completed","journal_seq":-1}`, err: "journal_seq -1 is negative"},
		{name: "journal_seq fractional", data: `{"task_id":"t1","status":"completed","journal_seq":1.5}`, err: "parse tasks/t1/state.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseStateHead("t1", []byte(tc.data))
			if tc.err == "" {
				if err != nil || h != tc.want {
					t.Fatalf("ParseStateHead = %+v, %v; want %+v", h, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseStateHead = %+v, %v; want ErrInvalid naming %q", h, err, tc.err)
			}
		})
	}
}

// TestCheckStateHeadRefusesNullEntries: a decoded state whose subtask,
// checkpoint or worker is null (a state.json edited by hand) is refused
// naming it, the least such key when there are several.
func TestCheckStateHeadRefusesNullEntries(t *testing.T) {
	head := State{TaskID: "t1", Status: "executing"}
	for _, tc := range []struct {
		name string
		edit func(*State)
		err  string
	}{
		{"sound", func(st *State) {
			st.Subtasks = map[string]*SubtaskState{"st_1": {}}
			st.Workers = map[string]*WorkerState{}
		}, ""},
		{"a subtask null", func(st *State) { st.Subtasks = map[string]*SubtaskState{"st_2": nil, "st_1": nil, "st_0": {}} }, `subtask "st_1" is null`},
		{"a subtask of the empty id null", func(st *State) { st.Subtasks = map[string]*SubtaskState{"": nil} }, `subtask "" is null`},
		{"a checkpoint null", func(st *State) { st.Checkpoints = map[string]*CheckpointState{"cp": nil} }, `checkpoint "cp" is null`},
		{"a worker null", func(st *State) { st.Workers = map[string]*WorkerState{"w1": nil} }, `worker "w1" is null`},
		{"the head first", func(st *State) { st.TaskID = "t2"; st.Workers = map[string]*WorkerState{"w1": nil} }, `state of task "t2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := head
			tc.edit(&st)
			err := CheckStateHead("t1", st)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("CheckStateHead = %v, want %q", err, tc.err)
			}
		})
	}
}
