package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
)

// verdictStateJSON holds what a verdict on one marker needs of a state
// (machine.Judge, machine.JudgeReused): the head, the one subtask the
// marker names and the errors. Every other field is skipped unread.
type verdictStateJSON struct {
	stateHeadJSON
	PlanStatus string       `json:"plan_status"`
	Subtasks   *subtaskPick `json:"subtasks"`
	Errors     []StateError `json:"errors"`
}

// subtaskPick decodes of a state's subtasks object the one entry whose
// key is id, and only scans past the others.
type subtaskPick struct {
	id  string
	got *SubtaskState
}

// UnmarshalJSON finds the entry of key p.id among the object's entries
// without decoding the others. encoding/json has checked the whole
// document before it calls it, so data is a valid JSON value.
func (p *subtaskPick) UnmarshalJSON(data []byte) error {
	if len(data) == 0 || data[0] != '{' {
		return errors.New("subtasks is not an object")
	}
	val, ok := objectEntry(data, p.id)
	if !ok {
		return nil
	}
	var ss SubtaskState
	if err := json.Unmarshal(val, &ss); err != nil {
		return fmt.Errorf("subtask %s: %w", p.id, err)
	}
	p.got = &ss
	return nil
}

// objectEntry is the value of key in obj, a valid JSON object, found by a
// scan of its structure: strings are skipped whole (escapes included), and
// a string followed by a colon one level in is a key.
func objectEntry(obj []byte, key string) ([]byte, bool) {
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			start := i
			for i++; i < len(obj) && obj[i] != '"'; i++ {
				if obj[i] == '\\' {
					i++
				}
			}
			if depth != 1 {
				continue
			}
			j := skipSpace(obj, i+1)
			if j >= len(obj) || obj[j] != ':' {
				continue // a value
			}
			if !keyIs(obj[start:i+1], key) {
				continue
			}
			v := skipSpace(obj, j+1)
			return obj[v:valueEnd(obj, v)], true
		}
	}
	return nil, false
}

// keyIs reports whether the JSON string tok is key.
func keyIs(tok []byte, key string) bool {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1:len(tok)-1]) == key
	}
	var s string
	return json.Unmarshal(tok, &s) == nil && s == key
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is where the valid JSON value starting at b[i] ends: at the
// comma or closing brace that follows it at its own level.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return len(b)
}

// ParseVerdictState reads data, task id's state, for what the verdict on
// a marker naming subtaskID, journaled as seq, needs: the head
// (ParseStateHead's, checked the same way), plan_status, the subtask
// subtaskID alone in Subtasks (none when the state has no such subtask)
// and, in Errors, the errors of seq alone. The rest is scanned past, not
// decoded, nor is the whole checked against its schema: the daemon checked
// the state before it wrote it, and `workspaced validate` (ReadState) is
// the full check. A verdict read so costs a scan of the document, not its
// decoding.
func ParseVerdictState(id string, data []byte, subtaskID string, seq int64) (State, error) {
	name := path.Join(TaskDir(id), "state.json")
	v := verdictStateJSON{Subtasks: &subtaskPick{id: subtaskID}}
	if err := json.Unmarshal(data, &v); err != nil {
		return State{}, &Error{Kind: ErrInvalid, Op: "parse " + name, Err: DescribeJSONError(data, err), Hint: StateHint}
	}
	if err := v.check(id); err != nil {
		return State{}, &Error{Kind: ErrInvalid, Op: "read " + name, Err: err, Hint: StateHint}
	}
	st := State{TaskID: *v.TaskID, Status: *v.Status, Phase: v.Phase, JournalSeq: *v.JournalSeq, PlanStatus: v.PlanStatus}
	if v.Subtasks != nil && v.Subtasks.got != nil {
		st.Subtasks = map[string]*SubtaskState{subtaskID: v.Subtasks.got}
	}
	for _, e := range v.Errors {
		if e.Seq == seq {
			st.Errors = append(st.Errors, e)
		}
	}
	return st, nil
}
