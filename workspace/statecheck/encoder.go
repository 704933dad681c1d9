package statecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// Encoder encodes the successive states of one task exactly as
// atomicfile.Marshal does, byte for byte, and checks each against the
// state schema like Next, at the cost of what changed: it keeps the
// encoding of every subtask, checkpoint and worker entry of the last
// state, and encodes again only the entries a Changed names (the rest of
// the document, small, is encoded whole each time). A task of ten
// thousand subtasks then costs a commit about what one of a hundred
// does, plus the copy of the bytes.
//
// An Encoder is not safe for concurrent use. Its owner calls Reset when
// the next state does not derive from the last one encoded (read again
// from disk, or the last one was never written).
type Encoder struct {
	subtasks, checkpoints, workers section
	// primed: the sections hold the last state's entries, all checked.
	primed bool
	buf    bytes.Buffer
	out    []byte // the document last encoded, reused by the next
}

// section is the encoded entries of one map, in the order of their keys
// (the order encoding/json writes a map in).
type section struct {
	keys  []string
	frags [][]byte // frags[i] is keys[i]'s entry as it sits in the document
	bytes int      // the frags' total length
	null  bool     // the map was nil: encoded as null
}

// Reset forgets everything encoded: the next Encode encodes (and, unless
// told its state derives from a valid one, checks) the whole state.
func (e *Encoder) Reset() { *e = Encoder{} }

// Encode encodes st and checks it. The bytes it returns are the
// encoder's: they are valid until its next call. changed names the entries that may
// differ from the last state encoded, which st derives from; when the
// encoder holds none (new, or Reset), every entry is encoded, and checked
// unless valid says st derives from a state known valid (then only
// changed entries are checked, as Next does). A state that would not
// validate is refused, and the encoder is Reset.
func (e *Encoder) Encode(st workspace.State, changed Changed, valid bool) ([]byte, error) {
	whole := changed.All || (!e.primed && !valid)
	var err error
	if !e.primed || changed.All {
		err = e.encodeAll(st)
	} else {
		err = e.encodeChanged(st, changed)
	}
	var data []byte
	if err == nil {
		data = e.assemble(st)
		if whole {
			err = schemas.Validate(schemas.KindState, data)
		} else {
			part := st
			part.Subtasks = pick(st.Subtasks, changed.Subtasks)
			part.Checkpoints = pick(st.Checkpoints, changed.Checkpoints)
			part.Workers = pick(st.Workers, changed.Workers)
			err = checkPart(part, data)
		}
	}
	if err != nil {
		e.Reset()
		return nil, err
	}
	e.primed = true
	return data, nil
}

// pick is the entries of m that ids names.
func pick[V any](m map[string]*V, ids map[string]struct{}) map[string]*V {
	out := make(map[string]*V, len(ids))
	for id := range ids {
		if v, ok := m[id]; ok {
			out[id] = v
		}
	}
	return out
}

// encodeAll encodes every entry of st.
func (e *Encoder) encodeAll(st workspace.State) error {
	if err := e.subtasks.all(st.Subtasks); err != nil {
		return err
	}
	if err := e.checkpoints.all(st.Checkpoints); err != nil {
		return err
	}
	return e.workers.all(st.Workers)
}

// encodeChanged encodes the entries of st that changed names.
func (e *Encoder) encodeChanged(st workspace.State, changed Changed) error {
	if err := e.subtasks.some(st.Subtasks, changed.Subtasks); err != nil {
		return err
	}
	if err := e.checkpoints.some(st.Checkpoints, changed.Checkpoints); err != nil {
		return err
	}
	return e.workers.some(st.Workers, changed.Workers)
}

func (s *section) all(m any) error {
	*s = section{}
	vals := map[string]any{}
	if err := forEntries(m, nil, func(id string, v any, _ bool) error { vals[id] = v; return nil }, &s.null); err != nil {
		return err
	}
	s.keys = slices.Sorted(maps.Keys(vals))
	s.frags = make([][]byte, len(s.keys))
	for i, id := range s.keys {
		frag, err := encodeEntry(id, vals[id])
		if err != nil {
			return err
		}
		s.frags[i], s.bytes = frag, s.bytes+len(frag)
	}
	return nil
}

func (s *section) some(m any, ids map[string]struct{}) error {
	if ids == nil {
		ids = map[string]struct{}{}
	}
	return forEntries(m, ids, func(id string, v any, present bool) error { return s.set(id, v, present) }, &s.null)
}

// forEntries calls f for each entry of m (a map of one of the state's
// entry types) that ids names, or for every entry when ids is nil, with
// present false for a name m does not hold; null says whether m is nil.
func forEntries(m any, ids map[string]struct{}, f func(id string, v any, present bool) error, null *bool) error {
	switch m := m.(type) {
	case map[string]*workspace.SubtaskState:
		return entries(m, ids, f, null)
	case map[string]*workspace.CheckpointState:
		return entries(m, ids, f, null)
	case map[string]*workspace.WorkerState:
		return entries(m, ids, f, null)
	}
	return fmt.Errorf("statecheck: no entries in %T", m)
}

func entries[V any](m map[string]*V, ids map[string]struct{}, f func(id string, v any, present bool) error, null *bool) error {
	*null = m == nil
	if ids == nil {
		for id, v := range m {
			if err := f(id, v, true); err != nil {
				return err
			}
		}
		return nil
	}
	for id := range ids {
		v, ok := m[id]
		if err := f(id, v, ok); err != nil {
			return err
		}
	}
	return nil
}

// set encodes entry id (v), or drops it when not present.
func (s *section) set(id string, v any, present bool) error {
	i, found := slices.BinarySearch(s.keys, id)
	if found {
		s.bytes -= len(s.frags[i])
	}
	if !present {
		if found {
			s.keys = slices.Delete(s.keys, i, i+1)
			s.frags = slices.Delete(s.frags, i, i+1)
		}
		return nil
	}
	frag, err := encodeEntry(id, v)
	if err != nil {
		return err
	}
	if !found {
		s.keys = slices.Insert(s.keys, i, id)
		s.frags = slices.Insert(s.frags, i, frag)
	}
	s.frags[i], s.bytes = frag, s.bytes+len(frag)
	return nil
}

// encodeEntry is entry id (value v) as it sits in the document: its key,
// then its value indented two levels deep.
func encodeEntry(id string, v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString("\n    ")
	if err := enc.Encode(id); err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1)
	b.WriteString(": ")
	enc.SetIndent("    ", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %s: %w", id, err)
	}
	b.Truncate(b.Len() - 1)
	return b.Bytes(), nil
}

// The maps' lines in a document encoded with the maps empty: where each
// section's entries go.
var (
	subtasksAt    = []byte("\n  \"subtasks\": {}")
	checkpointsAt = []byte("\n  \"checkpoints\": {}")
	workersAt     = []byte("\n  \"workers\": {}")
)

// assemble writes the document: st without its entries, encoded, with
// each section's entries put in their place.
func (e *Encoder) assemble(st workspace.State) []byte {
	shell := st
	shell.Subtasks, shell.Checkpoints, shell.Workers = nil, nil, nil
	if !e.subtasks.null {
		shell.Subtasks = map[string]*workspace.SubtaskState{}
	}
	if !e.checkpoints.null {
		shell.Checkpoints = map[string]*workspace.CheckpointState{}
	}
	if !e.workers.null {
		shell.Workers = map[string]*workspace.WorkerState{}
	}
	e.buf.Reset()
	enc := json.NewEncoder(&e.buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(shell); err != nil {
		// The shell holds strings, numbers and times only.
		panic(fmt.Sprintf("statecheck: encode a state's shell: %v", err))
	}
	head := e.buf.Bytes()
	size := len(head) + e.subtasks.bytes + e.checkpoints.bytes + e.workers.bytes +
		len(e.subtasks.keys) + len(e.checkpoints.keys) + len(e.workers.keys) + 16
	out := e.out[:0]
	if cap(out) < size {
		out = make([]byte, 0, size+size/8)
	}
	for _, sec := range []struct {
		at []byte
		s  *section
	}{{subtasksAt, &e.subtasks}, {checkpointsAt, &e.checkpoints}, {workersAt, &e.workers}} {
		if sec.s.null || len(sec.s.keys) == 0 {
			continue
		}
		i := bytes.Index(head, sec.at)
		out = append(out, head[:i+len(sec.at)-1]...)
		for j, frag := range sec.s.frags {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, frag...)
		}
		out = append(out, "\n  }"...)
		head = head[i+len(sec.at):]
	}
	e.out = append(out, head...)
	return e.out
}
