package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// A state.json is mostly the entries of its subtasks, checkpoints and
// workers, and a burst changes few of them: the encoding of the others can
// be kept from the last write. stateDelta says which entries changed;
// fragments keeps the encodings; encodeState puts a state together from
// them, byte for byte what atomicfile.Marshal gives (a test holds it to
// that), so what is written stays canonical whoever writes it.

// stateDelta is the entries of next that differ from prev (a nil value
// always counts as changed), by map.
type stateDelta struct {
	subtasks    map[string]*workspace.SubtaskState
	checkpoints map[string]*workspace.CheckpointState
	workers     map[string]*workspace.WorkerState
}

func diffState(prev, next workspace.State) stateDelta {
	return stateDelta{
		subtasks:    changed(prev.Subtasks, next.Subtasks, subtaskEqual),
		checkpoints: changed(prev.Checkpoints, next.Checkpoints, checkpointEqual),
		workers:     changed(prev.Workers, next.Workers, workerEqual),
	}
}

// changed is the entries of next that are not in prev with an equal value
// (a nil value always counts as changed).
func changed[V any](prev, next map[string]*V, equal func(a, b *V) bool) map[string]*V {
	out := make(map[string]*V)
	for k, v := range next {
		if p, ok := prev[k]; !ok || v == nil || p == nil || !equal(p, v) {
			out[k] = v
		}
	}
	return out
}

// The entry equalities diffState uses, field by field: a state of
// hundreds of subtasks is compared on every state write, and reflection
// made that the largest part of the diff. They may call two entries that
// encode alike different (times in different locations), never the
// reverse; TestEntryEqual holds each to every field of its type.

func subtaskEqual(a, b *workspace.SubtaskState) bool {
	return a.Status == b.Status && a.Worker == b.Worker && slices.Equal(a.BlockedBy, b.BlockedBy) &&
		(a.BlockedBy == nil) == (b.BlockedBy == nil) && a.Attempts == b.Attempts &&
		timeEqual(a.StartedAt, b.StartedAt) && timeEqual(a.CompletedAt, b.CompletedAt) &&
		a.Output == b.Output && a.Error == b.Error
}

func checkpointEqual(a, b *workspace.CheckpointState) bool {
	return a.Status == b.Status && timeEqual(a.ReachedAt, b.ReachedAt) &&
		timeEqual(a.ReviewedAt, b.ReviewedAt) && a.Review == b.Review
}

func workerEqual(a, b *workspace.WorkerState) bool { return *a == *b }

func timeEqual(a, b *time.Time) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// fragments is the encoding of each entry of a state's maps as it appears
// in the file, from the line break before its key to the end of its value
// (indented for its depth), by map field and key.
type fragments struct {
	subtasks, checkpoints, workers map[string][]byte
}

// The indentation of an entry's lines inside one of the state's maps.
const (
	entryPrefix = "    "
	entryIndent = "  "
)

// encodeState encodes st as atomicfile.Marshal does. old holds the
// fragments of the state st was derived from and delta what changed since
// it: an entry not in delta reuses its old fragment. It returns the bytes
// and the fragments of st.
func encodeState(st workspace.State, old fragments, delta stateDelta) ([]byte, fragments, error) {
	shell := st
	shell.Subtasks = map[string]*workspace.SubtaskState{}
	shell.Checkpoints = map[string]*workspace.CheckpointState{}
	shell.Workers = map[string]*workspace.WorkerState{}
	data, err := atomicfile.Marshal(shell)
	if err != nil {
		return nil, fragments{}, err
	}
	var nf fragments
	if nf.subtasks, err = encodeEntries(st.Subtasks, old.subtasks, delta.subtasks); err != nil {
		return nil, fragments{}, err
	}
	if nf.checkpoints, err = encodeEntries(st.Checkpoints, old.checkpoints, delta.checkpoints); err != nil {
		return nil, fragments{}, err
	}
	if nf.workers, err = encodeEntries(st.Workers, old.workers, delta.workers); err != nil {
		return nil, fragments{}, err
	}
	// Each map is an empty object in data, at the top level, in field
	// order: `\n  "<name>": {}` can only be that (inside a string the line
	// break and the quotes are escaped).
	fields := []struct {
		name  string
		frags map[string][]byte
	}{{"subtasks", nf.subtasks}, {"checkpoints", nf.checkpoints}, {"workers", nf.workers}}
	size := len(data)
	for _, f := range fields {
		for _, b := range f.frags {
			size += len(b) + 1
		}
	}
	out := make([]byte, 0, size+16)
	rest := data
	for _, f := range fields {
		empty := []byte("\n  \"" + f.name + "\": {}")
		at := bytes.Index(rest, empty)
		if at < 0 || bytes.Contains(rest[at+len(empty):], empty) {
			return nil, fragments{}, fmt.Errorf("encode state: field %q not found once", f.name)
		}
		out = append(out, rest[:at]...)
		rest = rest[at+len(empty):]
		if len(f.frags) == 0 {
			out = append(out, empty...)
			continue
		}
		out = append(out, empty[:len(empty)-1]...) // without the closing brace
		keys := make([]string, 0, len(f.frags))
		for k := range f.frags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, f.frags[k]...)
		}
		out = append(out, "\n  }"...)
	}
	return append(out, rest...), nf, nil
}

// encodeEntries returns the fragment of every entry of m: the old one
// when the entry is not in changed, a new encoding otherwise.
func encodeEntries[V any](m map[string]*V, old map[string][]byte, changed map[string]*V) (map[string][]byte, error) {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		if f, ok := old[k]; ok {
			if _, ch := changed[k]; !ch {
				out[k] = f
				continue
			}
		}
		f, err := encodeFragment(k, v)
		if err != nil {
			return nil, fmt.Errorf("encode %q: %w", k, err)
		}
		out[k] = f
	}
	return out, nil
}

// encodeFragment encodes the entry k: v of one of the state's maps as it
// appears in the file, the line break before the key included.
func encodeFragment(k string, v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("\n" + entryPrefix)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(k); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteString(": ")
	enc.SetIndent(entryPrefix, entryIndent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
