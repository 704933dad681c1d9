package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
		{name: "bytes after it", sub: "st_1", data: `{` + head + `} {}`, err: "bytes after the document"},
		{name: "brackets crossed", sub: "st_1", data: `{` + head + `,"checkpoints":{"c":[1}]}}`, err: "matching bracket"},
		{name: "string cut short", sub: "st_1", data: `{` + head + `,"phase":"exec`, err: "inside a string"},
		{name: "errors not an array", sub: "st_1", data: `{` + head + `,"errors":{}}`, err: "errors is not an array"},
		{name: "a head field of the wrong type", sub: "st_1", data: `{"task_id":"t1","status":"executing","journal_seq":"9"}`, err: "journal_seq"},
		{name: "errors and subtasks null", sub: "st_1", data: `{` + head + `,"subtasks":null,"errors":null}`},
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

// FuzzParseVerdictState: on any document that is valid JSON, the
// verdict read finds what a whole decoding finds (verdictReference); on
// any other it fails or returns, never panics.
func FuzzParseVerdictState(f *testing.F) {
	const head = `"task_id":"t1","status":"executing","plan_status":"approved","journal_seq":9`
	f.Add(`{`+head+`,"subtasks":{"st_1":{"status":"pending"},"st_2":{"status":"x","output":"\"st_1\":"}}}`, "st_1", int64(7))
	f.Add(`{`+head+`,"subtasks":{"a\"":{"status":"y"}, "a" : {"status":"z","blocked_by":["a"]}}}`, "a", int64(1))
	f.Add(`{`+head+`,"errors":[{"at":"2026-01-01T00:00:00Z","seq":7,"message":"a"},{"seq":"7"},{"seq":7.0},{"seq":8}]}`, "st_1", int64(7))
	f.Add(`{`+head+`,"subtasks":{"st_1":{"status":"pending"},"st_1":{"status":"done"}},"subtasks":null}`, "st_1", int64(0))
	f.Add(`{`+head+`,"x":[{"y":"\\"},tru,-1e9],"errors":[null]}`, "st_1", int64(0))
	f.Fuzz(func(t *testing.T, doc, sub string, seq int64) {
		got, err := ParseVerdictState("t1", []byte(doc), sub, seq)
		if !json.Valid([]byte(doc)) || !utf8.ValidString(doc) || !utf8.ValidString(sub) {
			return
		}
		want, werr := verdictReference("t1", []byte(doc), sub, seq)
		if (err != nil) != (werr != nil) {
			t.Fatalf("ParseVerdictState error %v; a whole decoding's %v", err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseVerdictState = %+v; a whole decoding finds %+v", got, want)
		}
	})
}

// verdictReference is what ParseVerdictState returns, read by a whole
// decoding of data with encoding/json (keys matched exactly, the last of
// a key given twice counting).
func verdictReference(id string, data []byte, sub string, seq int64) (State, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return State{}, fmt.Errorf("not an object: %v", err)
	}
	var v verdictScan
	for key, to := range map[string]any{"task_id": &v.head.TaskID, "status": &v.head.Status, "phase": &v.head.Phase,
		"journal_seq": &v.head.JournalSeq, "plan_status": &v.plan} {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, to); err != nil {
				return State{}, err
			}
		}
	}
	if raw, ok := top["subtasks"]; ok {
		var subs map[string]json.RawMessage
		if err := json.Unmarshal(raw, &subs); err != nil {
			return State{}, err
		}
		if raw, ok := subs[sub]; ok {
			v.sub = new(SubtaskState)
			if err := json.Unmarshal(raw, v.sub); err != nil {
				return State{}, err
			}
		}
	}
	if raw, ok := top["errors"]; ok {
		var errs []json.RawMessage
		if err := json.Unmarshal(raw, &errs); err != nil {
			return State{}, err
		}
		for _, raw := range errs {
			var e map[string]json.RawMessage
			if err := json.Unmarshal(raw, &e); err != nil || e == nil {
				return State{}, fmt.Errorf("an error is not an object: %v", err)
			}
			var n int64
			if json.Unmarshal(e["seq"], &n) != nil || n != seq {
				continue
			}
			var se StateError
			if err := json.Unmarshal(raw, &se); err != nil {
				return State{}, err
			}
			v.errs = append(v.errs, se)
		}
	}
	if err := v.head.check(id); err != nil {
		return State{}, err
	}
	st := State{TaskID: *v.head.TaskID, Status: *v.head.Status, Phase: v.head.Phase, JournalSeq: *v.head.JournalSeq, PlanStatus: v.plan, Errors: v.errs}
	if v.sub != nil {
		st.Subtasks = map[string]*SubtaskState{sub: v.sub}
	}
	return st, nil
}

// BenchmarkParseVerdictState10000 times the verdict read of a state of
// 10,000 subtasks (what a waiter reads of it once its marker is applied).
func BenchmarkParseVerdictState10000(b *testing.B) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := State{TaskID: "t1", Status: "executing", Phase: "executing", PlanStatus: "approved", JournalSeq: 20000,
		Subtasks: map[string]*SubtaskState{}, Errors: []StateError{}}
	for i := range 10000 {
		ss := &SubtaskState{Status: "pending"}
		if i%2 == 0 {
			ss = &SubtaskState{Status: "completed", Worker: "agent_1", StartedAt: &at, CompletedAt: &at, Attempts: 1, Output: fmt.Sprintf("outputs/st_%d.json", i)}
		}
		st.Subtasks[fmt.Sprintf("st_%d", i)] = ss
	}
	for i := range 100 {
		st.Errors = append(st.Errors, StateError{At: at, Seq: int64(i), Agent: "agent_2", SubtaskID: "st_1", Message: "claim refused: taken by agent_1"})
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		got, err := ParseVerdictState("t1", data, "st_5000", 50)
		if err != nil || got.Subtasks["st_5000"] == nil || len(got.Errors) != 1 {
			b.Fatalf("%+v, %v", got, err)
		}
	}
}

// TestStateTailSeq: the journal_seq of a document that ends with it, and
// nothing for one that does not.
func TestStateTailSeq(t *testing.T) {
	cases := []struct {
		data string
		seq  int64
		ok   bool
	}{
		{"{\n  \"status\": \"executing\",\n  \"journal_seq\": 42\n}\n", 42, true},
		{`{"journal_seq":0}`, 0, true},
		{`{"journal_seq": 7 } `, 7, true},
		{`{"journal_seq":-1}`, 0, false},
		{`{"journal_seq":1.5}`, 0, false},
		{`{"journal_seq":"1"}`, 0, false},
		{`{"journal_seq":1,"status":"x"}`, 0, false},
		{`{"x":"\"journal_seq":1}`, 0, false},
		{`{"my_journal_seq":1}`, 0, false},
		{`{"journal_seq":99999999999999999999}`, 0, false},
		{`"journal_seq":1}`, 1, true}, // not checked as a document: ParseVerdictState does that
		{``, 0, false},
		{`}`, 0, false},
	}
	for _, tc := range cases {
		if seq, ok := StateTailSeq([]byte(tc.data)); seq != tc.seq || ok != tc.ok {
			t.Errorf("StateTailSeq(%q) = %d, %v; want %d, %v", tc.data, seq, ok, tc.seq, tc.ok)
		}
	}
}

// FuzzStateTailSeq: of a valid document, the seq read from its tail is
// the journal_seq a whole decoding finds.
func FuzzStateTailSeq(f *testing.F) {
	f.Add(`{"task_id":"t1","journal_seq":3}`)
	f.Add(`{"a":{"journal_seq":1},"journal_seq":2}`)
	f.Add(`{"a":"\\"journal_seq\": 1}`)
	f.Fuzz(func(t *testing.T, doc string) {
		seq, ok := StateTailSeq([]byte(doc))
		if !ok || !json.Valid([]byte(doc)) {
			return
		}
		var whole map[string]json.RawMessage
		if err := json.Unmarshal([]byte(doc), &whole); err != nil {
			t.Fatalf("a document ending in a journal_seq does not decode as an object: %v", err)
		}
		var n int64
		if err := json.Unmarshal(whole["journal_seq"], &n); err != nil || n != seq {
			t.Fatalf("tail says %d; a whole decoding finds %s (%v)", seq, whole["journal_seq"], err)
		}
	})
}
