package statecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// Encoder encodes the successive states of one task exactly as
// atomicfile.Marshal does, byte for byte, and checks each against the
// state schema like Next, at the cost of what changed: it keeps the
// encoding of every subtask, checkpoint and worker entry of the last
// state, and encodes again only the entries a Changed names (the rest of
// the document, small, is encoded whole each time). It keeps the entries
// joined in blocks of blockLen as the document holds them, and joins again
// only the blocks holding a changed entry: EncodeParts hands out the
// document as those pieces, for a vectored write, so that a task of ten
// thousand subtasks costs a commit about what one of a hundred does, with
// no copy of the document on the way; Encode copies them into one slice.
//
// An Encoder is not safe for concurrent use. Its owner calls Reset when
// the next state does not derive from the last one encoded (read again
// from disk, or the last one was never written).
type Encoder struct {
	subtasks, checkpoints, workers section
	// primed: the sections hold the last state's entries, all checked.
	primed bool
	buf    bytes.Buffer
	parts  [][]byte // the pieces of the document last encoded
	blocks []bool   // blocks[i]: parts[i] is a block of entries (Blocks)
	shell  []byte   // the shell last checked, by shellKey
	out    []byte   // the document last encoded by Encode, reused by the next
}

// blockLen is how many entries a block joins: a changed entry costs the
// copy of its block (a few KiB), a document of n entries n/blockLen
// pieces.
const blockLen = 64

// section is the encoded entries of one map, in the order of their keys
// (the order encoding/json writes a map in).
type section struct {
	keys  []string
	frags [][]byte // frags[i] is keys[i]'s entry as it sits in the document
	bytes int      // the frags' total length
	null  bool     // the map was nil: encoded as null
	// blocks[j] is frags[j*blockLen:(j+1)*blockLen] joined, each entry
	// but the section's first after its comma; nil while one of them has
	// changed since, and missing past an entry added or dropped. The frags
	// of a joined block point into it.
	blocks [][]byte
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
	parts, size, err := e.EncodeParts(st, changed, valid)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return e.join(parts, size), nil
}

// EncodeParts is Encode with the document handed out as the pieces it is
// made of, in order (size bytes in all), for a vectored write: no copy of
// the whole document is made. The pieces are the encoder's, valid until
// its next call; the caller must not change them.
func (e *Encoder) EncodeParts(st workspace.State, changed Changed, valid bool) (parts [][]byte, size int, err error) {
	whole := changed.All || (!e.primed && !valid)
	if !e.primed || changed.All {
		err = e.encodeAll(st)
	} else {
		err = e.encodeChanged(st, changed)
	}
	if err == nil {
		parts, size = e.assemble(st)
		if whole {
			data := e.join(parts, size)
			parts = append(e.parts[:0], data)
			e.parts, e.blocks = parts, append(e.blocks[:0], false)
			err = schemas.Validate(schemas.KindState, data)
		} else {
			err = e.checkChanged(st, changed, size)
		}
	}
	if err != nil {
		e.Reset()
		return nil, 0, err
	}
	e.primed = true
	e.shell = shellKey(e.shell[:0], e.buf.Bytes())
	return parts, size, nil
}

// Blocks says, for each piece the last EncodeParts handed out, whether
// it is a block of entries. A block is never changed in place: one the
// next call leaves as it was is handed out again as the same slice (the
// same address and length), and one holding a changed entry as a new
// slice, so a caller that keeps the last call's blocks knows which pieces
// are unchanged by their address. The other pieces (the shell, or the
// whole document when it was encoded whole) are the encoder's buffers,
// rewritten by every call. The slice is the encoder's, valid until its
// next call.
func (e *Encoder) Blocks() []bool { return e.blocks }

// checkChanged checks a state derived from a valid one, size bytes
// encoded, at the cost of what changed: the shell (the document without
// its entries, as assemble left it in buf) when it differs from the last
// one checked by more than last_updated and journal_seq, which the
// encoding of a time and of a non-negative integer always leaves valid;
// then the changed entries of each map, alone, against the map's
// subschema, keys and values at once (the schema puts no constraint
// across entries, nor between them and the shell).
func (e *Encoder) checkChanged(st workspace.State, changed Changed, size int) error {
	if size > schemas.MaxBytes {
		return fmt.Errorf("%s: %w: %d bytes, limit %d", schemas.KindState, schemas.ErrTooLarge, size, schemas.MaxBytes)
	}
	if head := e.buf.Bytes(); st.JournalSeq < 0 || !e.primed || !sameShell(e.shell, head) {
		if e.subtasks.null || e.checkpoints.null || e.workers.null {
			// Only the entries of a state derived from a valid one are
			// checked, not how its maps are written.
			shell := st
			shell.Subtasks, shell.Checkpoints, shell.Workers = map[string]*workspace.SubtaskState{},
				map[string]*workspace.CheckpointState{}, map[string]*workspace.WorkerState{}
			var err error
			if head, err = atomicfile.Marshal(shell); err != nil {
				return err
			}
		}
		if err := schemas.Validate(schemas.KindState, head); err != nil {
			return err
		}
	}
	subtasks, checkpoints, workers := pick(st.Subtasks, changed.Subtasks), pick(st.Checkpoints, changed.Checkpoints), pick(st.Workers, changed.Workers)
	for _, sec := range []struct {
		name string
		part any
		n    int
	}{{"subtasks", subtasks, len(subtasks)}, {"checkpoints", checkpoints, len(checkpoints)}, {"workers", workers, len(workers)}} {
		if sec.n == 0 {
			continue
		}
		data, err := json.Marshal(sec.part)
		if err != nil {
			return fmt.Errorf("encode %s: %w", sec.name, err)
		}
		if err := schemas.ValidateAt(schemas.KindState, "/properties/"+sec.name, "/"+sec.name, data); err != nil {
			return err
		}
	}
	return nil
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

// The lines of the shell that change with every state written.
var (
	lastUpdatedLine = []byte("\n  \"last_updated\": ")
	journalSeqLine  = []byte("\n  \"journal_seq\": ")
)

// shellKey appends to dst the shell document head without its
// last_updated and journal_seq lines (a key at the top level sits
// after a newline and two spaces: in a string a newline is escaped).
func shellKey(dst, head []byte) []byte {
	for _, line := range [][]byte{lastUpdatedLine, journalSeqLine} {
		i := bytes.Index(head, line)
		if i < 0 {
			continue
		}
		dst = append(dst, head[:i]...)
		head = head[i+len(line):]
		if j := bytes.IndexByte(head, '\n'); j >= 0 {
			head = head[j:]
		} else {
			head = nil
		}
	}
	return append(dst, head...)
}

// sameShell reports whether head is the shell key was made from, but for
// its last_updated and journal_seq.
func sameShell(key, head []byte) bool {
	var buf [1024]byte
	return bytes.Equal(key, shellKey(buf[:0], head))
}

// join copies parts, size bytes in all, into one slice, the encoder's.
func (e *Encoder) join(parts [][]byte, size int) []byte {
	out := e.out[:0]
	if cap(out) < size {
		out = make([]byte, 0, size+size/8)
	}
	for _, p := range parts {
		out = append(out, p...)
	}
	e.out = out
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
			s.stale(i, true)
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
	s.stale(i, !found)
	return nil
}

// stale notes that entry i changed: its block is to be joined again, and
// every later one too when entries moved (shifted is set).
func (s *section) stale(i int, shifted bool) {
	j := i / blockLen
	switch {
	case j >= len(s.blocks):
	case shifted:
		s.blocks = s.blocks[:j]
	default:
		s.blocks[j] = nil
	}
}

// appendBlocks appends the section's entries to parts, as blocks,
// joining those that changed.
func (s *section) appendBlocks(parts [][]byte) [][]byte {
	n := (len(s.keys) + blockLen - 1) / blockLen
	had := min(len(s.blocks), n)
	s.blocks = slices.Grow(s.blocks[:had], n-had)[:n]
	clear(s.blocks[had:]) // what an earlier, longer slice left there
	for j, b := range s.blocks {
		if b == nil {
			b = s.joinBlock(j)
		}
		parts = append(parts, b)
	}
	return parts
}

// joinBlock joins block j anew and points its frags into it.
func (s *section) joinBlock(j int) []byte {
	lo, hi := j*blockLen, min((j+1)*blockLen, len(s.frags))
	size := hi - lo
	for _, f := range s.frags[lo:hi] {
		size += len(f)
	}
	b := make([]byte, 0, size)
	for i := lo; i < hi; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		at := len(b)
		b = append(b, s.frags[i]...)
		s.frags[i] = b[at:len(b):len(b)]
	}
	s.blocks[j] = b
	return b
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

// The bytes that close a section's entries.
var sectionEnd = []byte("\n  }")

// assemble makes the document's pieces: st without its entries, encoded,
// cut where each section's entries go, with the section's blocks put in
// their place; size is their total length.
func (e *Encoder) assemble(st workspace.State) (parts [][]byte, size int) {
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
	size = len(head)
	parts = e.parts[:0]
	blocks := e.blocks[:0]
	for _, sec := range []struct {
		at []byte
		s  *section
	}{{subtasksAt, &e.subtasks}, {checkpointsAt, &e.checkpoints}, {workersAt, &e.workers}} {
		if sec.s.null || len(sec.s.keys) == 0 {
			continue
		}
		i := bytes.Index(head, sec.at)
		parts = append(parts, head[:i+len(sec.at)-1])
		blocks = append(blocks, false)
		n := len(parts)
		parts = sec.s.appendBlocks(parts)
		for range parts[n:] {
			blocks = append(blocks, true)
		}
		parts = append(parts, sectionEnd)
		blocks = append(blocks, false)
		head = head[i+len(sec.at):]
		size += sec.s.bytes + len(sec.s.keys) - 1 + len(sectionEnd) - 1
	}
	e.parts, e.blocks = append(parts, head), append(blocks, false)
	return e.parts, size
}
