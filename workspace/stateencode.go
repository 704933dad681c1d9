package workspace

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AppendStateIndent appends st to dst as a json.Encoder with
// SetEscapeHTML(false) and SetIndent(prefix, "  ") writes it, byte for
// byte, less the encoder's final newline: the tree's canonical encoding
// (prefix "") or a state inside another indented document. The
// subtasks, which make nearly all of a large state, are written here;
// the other fields' values, small, by encoding/json. Where encoding/json
// would fail (a time beyond year 9999), so does it: the caller then
// encodes with encoding/json, whose error is the word.
func AppendStateIndent(dst []byte, st *State, prefix string) ([]byte, error) {
	// A subtask takes under 200 bytes as the daemon writes them: the
	// document is grown once, not doubled a dozen times.
	e := stateEncoder{b: slices.Grow(dst, 200*len(st.Subtasks)+1024), prefix: prefix}
	e.b = append(e.b, '{')
	e.field(1, "task_id", true)
	e.str(st.TaskID)
	if st.PlanID != "" {
		e.field(1, "plan_id", false)
		e.str(st.PlanID)
	}
	if st.PlanVersion != 0 {
		e.field(1, "plan_version", false)
		e.b = strconv.AppendInt(e.b, int64(st.PlanVersion), 10)
	}
	if st.PlanStatus != "" {
		e.field(1, "plan_status", false)
		e.str(st.PlanStatus)
	}
	e.field(1, "status", false)
	e.str(st.Status)
	e.field(1, "phase", false)
	e.str(st.Phase)
	if st.StartedAt != nil {
		e.field(1, "started_at", false)
		e.time(st.StartedAt)
	}
	e.field(1, "last_updated", false)
	e.time(&st.LastUpdated)
	if st.CompletedAt != nil {
		e.field(1, "completed_at", false)
		e.time(st.CompletedAt)
	}
	e.field(1, "subtasks", false)
	e.subtasks(st.Subtasks)
	e.field(1, "checkpoints", false)
	e.value(1, st.Checkpoints)
	e.field(1, "workers", false)
	e.value(1, st.Workers)
	e.field(1, "revision_count", false)
	e.b = strconv.AppendInt(e.b, int64(st.RevisionCount), 10)
	if st.Amendment != nil {
		e.field(1, "amendment", false)
		e.value(1, st.Amendment)
	}
	e.field(1, "errors", false)
	e.value(1, st.Errors)
	e.field(1, "journal_seq", false)
	e.b = strconv.AppendInt(e.b, st.JournalSeq, 10)
	e.newline(0)
	e.b = append(e.b, '}')
	return e.b, e.err
}

// stateEncoder is one AppendStateIndent: what it wrote, the prefix of
// each line, and encoding/json's first error.
type stateEncoder struct {
	b      []byte
	prefix string
	err    error
}

// newline starts a line at depth.
func (e *stateEncoder) newline(depth int) {
	e.b = append(e.b, '\n')
	e.b = append(e.b, e.prefix...)
	for range depth {
		e.b = append(e.b, "  "...)
	}
}

// field starts the entry of key in an object at depth (its first when
// first): its line and its key.
func (e *stateEncoder) field(depth int, key string, first bool) {
	if !first {
		e.b = append(e.b, ',')
	}
	e.newline(depth)
	e.str(key)
	e.b = append(e.b, ':', ' ')
}

// str writes s as encoding/json does: printable ASCII as it is, anything
// else (an escape, a byte beyond ASCII) by encoding/json itself.
func (e *stateEncoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			e.value(0, s)
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

// time writes t as its MarshalJSON does: AppendText is the same strict
// RFC 3339, quoted there, with no allocation of its own.
func (e *stateEncoder) time(t *time.Time) {
	b, err := t.AppendText(append(e.b, '"'))
	if err != nil {
		e.value(0, t) // encoding/json's error
		return
	}
	e.b = append(b, '"')
}

// value writes v, at depth, with encoding/json.
func (e *stateEncoder) value(depth int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(e.prefix+strings.Repeat("  ", depth), "  ")
	if err := enc.Encode(v); err != nil {
		if e.err == nil {
			e.err = err
		}
		return
	}
	e.b = append(e.b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// subtasks writes the subtasks at depth 1, their ids in order.
func (e *stateEncoder) subtasks(m map[string]*SubtaskState) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	if len(m) == 0 {
		e.b = append(e.b, "{}"...)
		return
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	e.b = append(e.b, '{')
	for i, id := range ids {
		e.field(2, id, i == 0)
		e.subtask(m[id])
	}
	e.newline(1)
	e.b = append(e.b, '}')
}

// subtask writes s at depth 2.
func (e *stateEncoder) subtask(s *SubtaskState) {
	if s == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '{')
	e.field(3, "status", true)
	e.str(s.Status)
	if s.Worker != "" {
		e.field(3, "worker", false)
		e.str(s.Worker)
	}
	if len(s.BlockedBy) > 0 {
		e.field(3, "blocked_by", false)
		e.b = append(e.b, '[')
		for i, id := range s.BlockedBy {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.newline(4)
			e.str(id)
		}
		e.newline(3)
		e.b = append(e.b, ']')
	}
	if s.Attempts != 0 {
		e.field(3, "attempts", false)
		e.b = strconv.AppendInt(e.b, int64(s.Attempts), 10)
	}
	if s.StartedAt != nil {
		e.field(3, "started_at", false)
		e.time(s.StartedAt)
	}
	if s.CompletedAt != nil {
		e.field(3, "completed_at", false)
		e.time(s.CompletedAt)
	}
	if s.Output != "" {
		e.field(3, "output", false)
		e.str(s.Output)
	}
	if s.Error != "" {
		e.field(3, "error", false)
		e.str(s.Error)
	}
	e.newline(2)
	e.b = append(e.b, '}')
}
