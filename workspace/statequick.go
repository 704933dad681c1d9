package workspace

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// QuickState decodes data, a state document, into the State that
// encoding/json would decode it into, in a fraction of its time: a task
// of 10,000 subtasks is a document of 1.5 MB, which encoding/json takes
// tens of milliseconds to decode, mostly in its subtasks.
//
// It takes only documents shaped as the daemon (or PostgreSQL, or an
// agent's JSON library) writes them: every key spelled as the model's
// tags spell it and given once, no null where a value is expected, whole
// numbers, subtask ids and field names without escapes; and no nesting
// deeper than maxDepth (below 1: no bound). Anything else gives ok
// false, never a State encoding/json would not give: the caller then
// decodes data as before (DecodeStrict, json.Unmarshal), whose State or
// error is the word. The subtasks are decoded here, by hand; every other
// field of the state is small and decoded by encoding/json from its own
// bytes.
func QuickState(data []byte, maxDepth int) (st State, ok bool) {
	q := quickState{b: data, max: maxDepth}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' || !q.deep(1) {
		return State{}, false
	}
	var seen uint32
	end, err := eachEntry(data, i, func(key []byte, at int) (int, error) {
		f, to := stateField(&st, key)
		if to == nil || seen&(1<<f) != 0 {
			return 0, errNotQuick
		}
		seen |= 1 << f
		if f == 0 {
			return q.subtasks(&st.Subtasks, at)
		}
		e, err := skipValue(data, at)
		if err != nil {
			return 0, err
		}
		if maxDepth > 0 && CheckDepth(data[at:e], maxDepth-1) != nil {
			return 0, errNotQuick
		}
		if json.Unmarshal(data[at:e], to) != nil {
			return 0, errNotQuick
		}
		return e, nil
	})
	if err != nil || skipSpace(data, end) != len(data) {
		return State{}, false
	}
	return st, true
}

// errNotQuick stops a walk at what QuickState leaves to encoding/json.
var errNotQuick = errors.New("not a document QuickState takes")

// stateField returns the field of st that key (a JSON string, quotes
// included) names, exactly as its tag spells it, and its number, 0 for
// the subtasks; to is nil for any other key. encoding/json would also
// take a key spelled in other cases, or ignore an unknown one: those are
// left to it.
func stateField(st *State, key []byte) (n int, to any) {
	switch string(key[1 : len(key)-1]) {
	case "subtasks":
		return 0, &st.Subtasks
	case "task_id":
		return 1, &st.TaskID
	case "plan_id":
		return 2, &st.PlanID
	case "plan_version":
		return 3, &st.PlanVersion
	case "plan_status":
		return 4, &st.PlanStatus
	case "status":
		return 5, &st.Status
	case "phase":
		return 6, &st.Phase
	case "started_at":
		return 7, &st.StartedAt
	case "last_updated":
		return 8, &st.LastUpdated
	case "completed_at":
		return 9, &st.CompletedAt
	case "checkpoints":
		return 10, &st.Checkpoints
	case "workers":
		return 11, &st.Workers
	case "revision_count":
		return 12, &st.RevisionCount
	case "amendment":
		return 13, &st.Amendment
	case "errors":
		return 14, &st.Errors
	case "journal_seq":
		return 15, &st.JournalSeq
	}
	return 0, nil
}

// quickState is one QuickState walk: the document and its depth bound;
// the subtasks and their times are carved from slabs, and the words
// subtasks repeat (a status, a worker's name) made strings once.
type quickState struct {
	b     []byte
	max   int
	subs  slab[SubtaskState]
	times slab[time.Time]
	words map[string]string
}

// slab hands out pointers into blocks of Ts: one allocation a block, not
// one a T.
type slab[T any] struct{ free []T }

func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.free = make([]T, 256)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// deep reports whether a container at depth d (the document's own
// object is 1) is within the bound, as CheckDepth counts.
func (q *quickState) deep(d int) bool { return q.max < 1 || d <= q.max }

// subtasks decodes the subtasks object starting at b[at] into *m.
func (q *quickState) subtasks(m *map[string]*SubtaskState, at int) (int, error) {
	b := q.b
	if isNull(b, at) {
		return at + 4, nil
	}
	if b[at] != '{' || !q.deep(2) {
		return 0, errNotQuick
	}
	out := make(map[string]*SubtaskState)
	end, err := eachEntry(b, at, func(key []byte, at int) (int, error) {
		if !plainKey(key) {
			return 0, errNotQuick
		}
		id := string(key[1 : len(key)-1])
		if _, dup := out[id]; dup {
			return 0, errNotQuick
		}
		s, e, err := q.subtask(at)
		if err != nil {
			return 0, err
		}
		out[id] = s
		return e, nil
	})
	if err != nil {
		return 0, err
	}
	*m = out
	return end, nil
}

// subtask decodes the subtask object starting at b[at].
func (q *quickState) subtask(at int) (*SubtaskState, int, error) {
	b := q.b
	if b[at] != '{' || !q.deep(3) {
		return nil, 0, errNotQuick
	}
	s := q.subs.new()
	var seen uint8
	end, err := eachEntry(b, at, func(key []byte, at int) (int, error) {
		var f uint8
		var e int
		var err error
		switch string(key[1 : len(key)-1]) {
		case "status":
			f = 1
			s.Status, e, err = q.word(at)
		case "worker":
			f = 2
			s.Worker, e, err = q.word(at)
		case "blocked_by":
			f = 4
			s.BlockedBy, e, err = q.strs(at)
		case "attempts":
			f = 8
			s.Attempts, e, err = q.int(at)
		case "started_at":
			f = 16
			s.StartedAt, e, err = q.time(at)
		case "completed_at":
			f = 32
			s.CompletedAt, e, err = q.time(at)
		case "output":
			f = 64
			s.Output, e, err = q.str(at)
		case "error":
			f = 128
			s.Error, e, err = q.str(at)
		default:
			return 0, errNotQuick
		}
		if seen&f != 0 {
			return 0, errNotQuick
		}
		seen |= f
		return e, err
	})
	return s, end, err
}

// str decodes the string starting at b[at]. One with escapes or bytes
// beyond ASCII is decoded by encoding/json, which also refuses one that
// is not JSON.
func (q *quickState) str(at int) (string, int, error) {
	b := q.b
	if b[at] != '"' {
		return "", 0, errNotQuick
	}
	e, err := stringEnd(b, at)
	if err != nil {
		return "", 0, err
	}
	if plainKey(b[at:e]) {
		return string(b[at+1 : e-1]), e, nil
	}
	var s string
	if json.Unmarshal(b[at:e], &s) != nil {
		return "", 0, errNotQuick
	}
	return s, e, nil
}

// word is str for a value many subtasks share: each is made a string
// once.
func (q *quickState) word(at int) (string, int, error) {
	b := q.b
	if b[at] == '"' {
		if e, err := stringEnd(b, at); err == nil && plainKey(b[at:e]) {
			if w, ok := q.words[string(b[at+1:e-1])]; ok {
				return w, e, nil
			}
		}
	}
	s, e, err := q.str(at)
	if err == nil && len(q.words) < 64 {
		if q.words == nil {
			q.words = make(map[string]string)
		}
		q.words[s] = s
	}
	return s, e, err
}

// strs decodes the array of strings starting at b[at]: null is nil, []
// an empty slice, as encoding/json decodes them.
func (q *quickState) strs(at int) ([]string, int, error) {
	b := q.b
	if isNull(b, at) {
		return nil, at + 4, nil
	}
	if b[at] != '[' || !q.deep(4) {
		return nil, 0, errNotQuick
	}
	out := []string{}
	end, err := eachElement(b, at, func(at int) (int, error) {
		s, e, err := q.str(at)
		out = append(out, s)
		return e, err
	})
	return out, end, err
}

// int decodes the whole number starting at b[at]: JSON's grammar for an
// integer, no fraction or exponent, within int64.
func (q *quickState) int(at int) (int, int, error) {
	b := q.b
	j := at
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	switch {
	case j == digits, b[digits] == '0' && j > digits+1:
		return 0, 0, errNotQuick
	case j < len(b) && !isSpaceOrEnd(b[j]):
		return 0, 0, errNotQuick
	}
	n, err := strconv.ParseInt(string(b[at:j]), 10, 64)
	if err != nil {
		return 0, 0, errNotQuick
	}
	return int(n), j, nil
}

// time decodes the time starting at b[at] with time.Time's own
// UnmarshalJSON, as encoding/json does.
func (q *quickState) time(at int) (*time.Time, int, error) {
	b := q.b
	if b[at] != '"' {
		return nil, 0, errNotQuick
	}
	e, err := stringEnd(b, at)
	if err != nil || !plainKey(b[at:e]) {
		return nil, 0, errNotQuick
	}
	t := q.times.new()
	if t.UnmarshalJSON(b[at:e]) != nil {
		return nil, 0, errNotQuick
	}
	return t, e, nil
}

// plainKey reports whether the JSON string s (quotes included) holds
// printable ASCII alone, no escape: its bytes are its value.
func plainKey(s []byte) bool {
	for _, c := range s[1 : len(s)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// isSpaceOrEnd reports whether c may follow a number inside an object or
// an array.
func isSpaceOrEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}
