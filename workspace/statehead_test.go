package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
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
		{name: "torn past the head", data: `{"task_id":"t1","status":"completed","journal_seq":1,"subtasks":{"st_1":{"status":"pend`, err: "parse tasks/t1/state.json"},
		{name: "brackets unbalanced past the head", data: `{"task_id":"t1","status":"completed","journal_seq":1,"subtasks":{"st_1":{]}}`, err: "parse tasks/t1/state.json"},
		{name: "bytes after the document", data: `{"task_id":"t1","status":"completed","journal_seq":1} {}`, err: "parse tasks/t1/state.json"},
		{name: "the head after the subtasks", data: `{"subtasks":{"st_1":{"status":"pending","blocked_by":["a","}"]}},"errors":[],"journal_seq":9,"status":"executing","task_id":"t1"}`,
			want: StateHead{TaskID: "t1", Status: "executing", JournalSeq: 9}},
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

// FuzzParseStateHead: on any document that is valid JSON, the head read
// by a scan is the head a whole decoding finds (headReference), and fails
// where it fails; on any other document it fails or returns, never
// panics.
func FuzzParseStateHead(f *testing.F) {
	f.Add(`{"task_id":"t1","status":"executing","journal_seq":9,"subtasks":{"st_1":{"status":"pending"}}}`)
	f.Add(`{"subtasks":{"task_id":"t2"},"task_id":"t1","status":"completed","phase":"done","journal_seq":1,"task_id":"t1"}`)
	f.Add(`{"task_id":"t1","status":"failed","journal_seq":2,"x":[{"y":"\\"},tru,-1e9]}`)
	f.Add(`{"task_id":"t1","status":"failed","journal_seq":-2}`)
	f.Fuzz(func(t *testing.T, doc string) {
		got, err := ParseStateHead("t1", []byte(doc))
		if !json.Valid([]byte(doc)) || !utf8.ValidString(doc) {
			return
		}
		want, werr := headReference("t1", []byte(doc))
		if (err != nil) != (werr != nil) {
			t.Fatalf("ParseStateHead error %v; a whole decoding's %v", err, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseStateHead = %+v; a whole decoding finds %+v", got, want)
		}
	})
}

// headReference is what ParseStateHead returns, read by a whole decoding
// of data with encoding/json (keys matched exactly, the last of a key
// given twice counting).
func headReference(id string, data []byte) (StateHead, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return StateHead{}, fmt.Errorf("not an object: %v", err)
	}
	var h stateHeadJSON
	for key, to := range map[string]any{"task_id": &h.TaskID, "status": &h.Status, "phase": &h.Phase, "journal_seq": &h.JournalSeq} {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, to); err != nil {
				return StateHead{}, err
			}
		}
	}
	if err := h.check(id); err != nil {
		return StateHead{}, err
	}
	return StateHead{TaskID: *h.TaskID, Status: *h.Status, Phase: h.Phase, JournalSeq: *h.JournalSeq}, nil
}
