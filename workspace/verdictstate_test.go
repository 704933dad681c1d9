package workspace

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseVerdictState: of a state, the verdict read keeps the head, the
// plan status, the one subtask named (found by its key alone, however
// the other entries and strings look) and the errors of one seq; a state
// that does not parse or whose head is wrong is ErrInvalid.
func TestParseVerdictState(t *testing.T) {
	const head = `"task_id":"t1","status":"executing","plan_status":"approved","journal_seq":9`
	cases := []struct {
		name, data, sub string
		want            *SubtaskState // the subtask kept; nil for none
		errs            int           // errors of seq 7 kept
		err             string        // in the error; "" for none
	}{
		{name: "the subtask among others", sub: "st_2",
			data: `{` + head + `,"subtasks":{"st_1":{"status":"pending"},"st_2":{"status":"in_progress","worker":"a"},"st_3":{"status":"pending"}}}`,
			want: &SubtaskState{Status: "in_progress", Worker: "a"}},
		{name: "key only one level in", sub: "st_2",
			data: `{` + head + `,"subtasks":{"st_1":{"status":"failed","error":"\"st_2\": {}","blocked_by":["st_2"]},"st_2":{"status":"completed"}}}`,
			want: &SubtaskState{Status: "completed"}},
		{name: "escaped key", sub: "st_2",
			data: `{` + head + `,"subtasks": { "st\u005f2" : {"status":"pending","output":"a\\"}}}`,
			want: &SubtaskState{Status: "pending", Output: `a\`}},
		{name: "no such subtask", sub: "st_9",
			data: `{` + head + `,"subtasks":{"st_1":{"status":"pending"}}}`},
		{name: "no subtasks", sub: "st_1", data: `{` + head + `,"subtasks":null}`},
		{name: "errors of the seq", sub: "st_1",
			data: `{` + head + `,"errors":[{"at":"2026-01-01T00:00:00Z","seq":7,"message":"a"},{"at":"2026-01-01T00:00:00Z","seq":8,"message":"b"},{"at":"2026-01-01T00:00:00Z","seq":7,"message":"c"}]}`,
			errs: 2},
		{name: "subtask not an object", sub: "st_1", data: `{` + head + `,"subtasks":{"st_1":5}}`, err: "subtask st_1"},
		{name: "subtasks not an object", sub: "st_1", data: `{` + head + `,"subtasks":[]}`, err: "subtasks is not an object"},
		{name: "torn", sub: "st_1", data: `{` + head + `,"subtasks":{"st_1":{"sta`, err: "parse tasks/t1/state.json"},
		{name: "another task", sub: "st_1", data: `{"task_id":"t2","status":"executing","journal_seq":1}`, err: `state of task "t2", not "t1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseVerdictState("t1", []byte(tc.data), tc.sub, 7)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseVerdictState = %v; want ErrInvalid naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.TaskID != "t1" || st.Status != "executing" || st.PlanStatus != "approved" || st.JournalSeq != 9 {
				t.Fatalf("head %+v", st)
			}
			if got := st.Subtasks[tc.sub]; !reflect.DeepEqual(got, tc.want) || len(st.Subtasks) > 1 {
				t.Fatalf("subtasks %v, %+v; want %+v", st.Subtasks, got, tc.want)
			}
			if len(st.Errors) != tc.errs {
				t.Fatalf("errors %+v; want %d of seq 7", st.Errors, tc.errs)
			}
		})
	}
}

// FuzzVerdictSubtask: whatever the subtasks object holds, the entry the
// verdict read finds is the one a whole decoding finds.
func FuzzVerdictSubtask(f *testing.F) {
	f.Add(`{"st_1":{"status":"pending"},"st_2":{"status":"x","output":"\"st_1\":"}}`, "st_1")
	f.Add(`{"a\"":{"status":"y"}, "a" : {"status":"z","blocked_by":["a"]}}`, "a")
	f.Fuzz(func(t *testing.T, subtasks, id string) {
		var whole map[string]*SubtaskState
		if json.Unmarshal([]byte(subtasks), &whole) != nil || whole == nil {
			return
		}
		doc := `{"task_id":"t1","status":"executing","journal_seq":1,"subtasks":` + subtasks + `}`
		st, err := ParseVerdictState("t1", []byte(doc), id, 1)
		if err != nil {
			t.Fatalf("ParseVerdictState: %v", err)
		}
		if want := whole[id]; !reflect.DeepEqual(st.Subtasks[id], want) && want != nil {
			t.Fatalf("subtask %q: %+v; a whole decoding finds %+v", id, st.Subtasks[id], want)
		}
	})
}
