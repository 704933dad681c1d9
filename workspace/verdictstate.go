package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
)

// ParseVerdictState reads data, task id's state, for what the verdict on
// a marker naming subtaskID, journaled as seq, needs: the head
// (ParseStateHead's, checked the same way), plan_status, the subtask
// subtaskID alone in Subtasks (none when the state has no such subtask)
// and, in Errors, the errors of seq alone (those whose "seq" is seq).
//
// It is one pass over the document that decodes only those: every other
// value is skipped by its brackets and strings (found with bytes.IndexByte,
// not byte by byte), checked only for being whole: a document cut short,
// with unbalanced brackets or trailing bytes fails, but a number or word
// spelled wrong in a value skipped is not looked at. The daemon checked
// the state before it wrote it, and `workspaced validate` (ReadState) is
// the full check. Keys are matched exactly (the daemon writes them so),
// and of a key given twice the last counts, as encoding/json's would. A
// verdict read so costs a fast scan of the document — well under a
// millisecond for a task of 10,000 subtasks — not its decoding.
func ParseVerdictState(id string, data []byte, subtaskID string, seq int64) (State, error) {
	name := path.Join(TaskDir(id), "state.json")
	v, err := scanState(data, &verdictPick{sub: subtaskID, seq: seq})
	if err != nil {
		return State{}, &Error{Kind: ErrInvalid, Op: "parse " + name, Err: err, Hint: StateHint}
	}
	if err := v.head.check(id); err != nil {
		return State{}, &Error{Kind: ErrInvalid, Op: "read " + name, Err: err, Hint: StateHint}
	}
	h := v.head
	st := State{TaskID: *h.TaskID, Status: *h.Status, Phase: h.Phase, JournalSeq: *h.JournalSeq, PlanStatus: v.plan, Errors: v.errs}
	if v.sub != nil {
		st.Subtasks = map[string]*SubtaskState{subtaskID: v.sub}
	}
	return st, nil
}

// verdictPick names what a verdict reads beyond the head: one subtask
// and the errors of one journal record.
type verdictPick struct {
	sub string
	seq int64
}

// verdictScan is what scanState found.
type verdictScan struct {
	head stateHeadJSON
	plan string
	sub  *SubtaskState
	errs []StateError
}

// scanState walks the top-level object data and decodes of it the head,
// plan_status and, when pick is not nil, what it names (ParseVerdictState);
// every other value is skipped.
func scanState(data []byte, pick *verdictPick) (verdictScan, error) {
	var v verdictScan
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return v, errors.New("not a JSON object")
	}
	end, err := eachEntry(data, i, func(key []byte, at int) (int, error) {
		var to any
		switch {
		case pick != nil && keyIs(key, "subtasks"):
			var e int
			var err error
			v.sub, e, err = pickSubtask(data, at, pick.sub)
			return e, err
		case pick != nil && keyIs(key, "errors"):
			var e int
			var err error
			v.errs, e, err = errorsOf(data, at, pick.seq)
			return e, err
		case keyIs(key, "task_id"):
			to = &v.head.TaskID
		case keyIs(key, "status"):
			to = &v.head.Status
		case keyIs(key, "phase"):
			to = &v.head.Phase
		case keyIs(key, "journal_seq"):
			to = &v.head.JournalSeq
		case keyIs(key, "plan_status"):
			to = &v.plan
		}
		e, err := skipValue(data, at)
		if err != nil || to == nil {
			return e, err
		}
		if err := json.Unmarshal(data[at:e], to); err != nil {
			return 0, fmt.Errorf("%s: %w", key[1:len(key)-1], err)
		}
		return e, nil
	})
	if err != nil {
		return v, err
	}
	if j := skipSpace(data, end); j < len(data) {
		return v, fmt.Errorf("bytes after the document, at offset %d", j)
	}
	return v, nil
}

// pickSubtask decodes of the subtasks object starting at b[i] the entry
// of key id (nil when it has none), skipping the others, and returns
// where the object ends.
func pickSubtask(b []byte, i int, id string) (*SubtaskState, int, error) {
	if isNull(b, i) {
		return nil, i + 4, nil
	}
	if i >= len(b) || b[i] != '{' {
		return nil, 0, errors.New("subtasks is not an object")
	}
	var got []byte
	end, err := eachEntry(b, i, func(key []byte, at int) (int, error) {
		e, err := skipValue(b, at)
		if err == nil && keyIs(key, id) {
			got = b[at:e]
		}
		return e, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("subtasks: %w", err)
	}
	if got == nil {
		return nil, end, nil
	}
	var ss SubtaskState
	if err := json.Unmarshal(got, &ss); err != nil {
		return nil, 0, fmt.Errorf("subtask %s: %w", id, err)
	}
	return &ss, end, nil
}

// errorsOf decodes of the errors array starting at b[i] the errors whose
// "seq" is seq, skipping the others, and returns where the array ends.
func errorsOf(b []byte, i int, seq int64) ([]StateError, int, error) {
	if isNull(b, i) {
		return nil, i + 4, nil
	}
	if i >= len(b) || b[i] != '[' {
		return nil, 0, errors.New("errors is not an array")
	}
	var out []StateError
	end, err := eachElement(b, i, func(at int) (int, error) {
		if b[at] != '{' {
			return 0, errors.New("an error is not an object")
		}
		var s []byte
		e, err := eachEntry(b, at, func(key []byte, v int) (int, error) {
			e, err := skipValue(b, v)
			if err == nil && keyIs(key, "seq") {
				s = b[v:e]
			}
			return e, err
		})
		if err != nil {
			return 0, err
		}
		if n, err := strconv.ParseInt(string(s), 10, 64); err != nil || n != seq {
			return e, nil
		}
		var se StateError
		if err := json.Unmarshal(b[at:e], &se); err != nil {
			return 0, err
		}
		out = append(out, se)
		return e, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("errors: %w", err)
	}
	return out, end, nil
}

func isNull(b []byte, i int) bool {
	return bytes.HasPrefix(b[i:], []byte("null")) && (i+4 == len(b) || isDelim(b[i+4]))
}

// eachEntry calls f with the key (the JSON string, quotes included) of
// each entry of the object starting at b[i] and where its value starts;
// f returns where the value ends. eachEntry returns where the object
// ends, past its closing brace.
func eachEntry(b []byte, i int, f func(key []byte, at int) (int, error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, unexpected(b, i, "a key")
		}
		k, err := stringEnd(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i:k]
		i = skipSpace(b, k)
		if i >= len(b) || b[i] != ':' {
			return 0, unexpected(b, i, "':'")
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return 0, unexpected(b, i, "a value")
		}
		e, err := f(key, i)
		if err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = nextItem(b, e, '}'); err != nil || done {
			return i, err
		}
	}
}

// eachElement calls f with where each element of the array starting at
// b[i] starts; f returns where it ends. eachElement returns where the
// array ends.
func eachElement(b []byte, i int, f func(at int) (int, error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return 0, unexpected(b, i, "a value")
		}
		e, err := f(i)
		if err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = nextItem(b, e, ']'); err != nil || done {
			return i, err
		}
	}
}

// nextItem reads what follows an item ending at b[e]: a comma, and it
// returns where the next item starts; or the container's closing byte,
// and it returns where the container ends, and done.
func nextItem(b []byte, e int, closing byte) (next int, done bool, err error) {
	e = skipSpace(b, e)
	switch {
	case e < len(b) && b[e] == ',':
		return skipSpace(b, e+1), false, nil
	case e < len(b) && b[e] == closing:
		return e + 1, true, nil
	}
	return 0, false, unexpected(b, e, fmt.Sprintf("',' or '%c'", closing))
}

// skipValue returns where the value starting at b[i] ends: a string or
// container is skipped whole, its brackets matched; a number or word runs
// to the next delimiter.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, unexpected(b, i, "a value")
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		return containerEnd(b, i)
	case '}', ']', ',', ':':
		return 0, unexpected(b, i, "a value")
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	return j, nil
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', '"', '{', '[', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// structural marks the bytes containerEnd stops at.
var structural = [256]bool{'{': true, '}': true, '[': true, ']': true, '"': true}

// maxScanDepth bounds the nesting containerEnd follows, beyond any the
// daemon writes.
const maxScanDepth = 10000

// containerEnd returns where the object or array starting at b[i] ends,
// past its closing bracket, each bracket matched with its opener.
func containerEnd(b []byte, i int) (int, error) {
	var buf [32]byte
	stack := buf[:0]
	for ; i < len(b); i++ {
		for i < len(b) && !structural[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == maxScanDepth {
				return 0, fmt.Errorf("nested deeper than %d, at offset %d", maxScanDepth, i)
			}
			stack = append(stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if stack[len(stack)-1] != open {
				return 0, unexpected(b, i, "a matching bracket")
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, nil
			}
		case '"':
			e, err := stringEnd(b, i)
			if err != nil {
				return 0, err
			}
			i = e - 1
		}
	}
	return 0, errors.New("the document ends inside a value (cut short?)")
}

// stringEnd returns where the string starting at b[i] (its opening
// quote) ends, past its closing quote.
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errors.New("the document ends inside a string (cut short?)")
		}
		q := j + k
		n := 0 // backslashes just before the quote
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

func unexpected(b []byte, i int, want string) error {
	if i >= len(b) {
		return fmt.Errorf("the document ends where %s was expected (cut short?)", want)
	}
	return fmt.Errorf("%q at offset %d where %s was expected", b[i], i, want)
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

// StateTailSeq reads the journal_seq of a state document from its last
// bytes alone, where the daemon writes it: the document's last entry,
// `"journal_seq": N }`. ok is false when the document does not end so. A
// reader waiting for a state to reach a seq uses it to pass over the
// states written before that, without scanning them: it never decides
// from it, as ParseVerdictState reads (and checks) the same field.
func StateTailSeq(data []byte) (seq int64, ok bool) {
	i := len(data) - 1
	back := func() {
		for i >= 0 && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			i--
		}
	}
	back()
	if i < 0 || data[i] != '}' {
		return 0, false
	}
	i--
	back()
	end := i + 1
	for i >= 0 && data[i] >= '0' && data[i] <= '9' {
		i--
	}
	if i+1 == end {
		return 0, false
	}
	n, err := strconv.ParseInt(string(data[i+1:end]), 10, 64)
	if err != nil {
		return 0, false
	}
	back()
	if i < 0 || data[i] != ':' {
		return 0, false
	}
	i--
	back()
	const key = `"journal_seq"`
	if i+1 < len(key) || string(data[i+1-len(key):i+1]) != key {
		return 0, false
	}
	// The key's opening quote must not be an escaped one inside a string.
	if k := i + 1 - len(key); k > 0 && data[k-1] == '\\' {
		return 0, false
	}
	return n, true
}
