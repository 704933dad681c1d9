package files

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"path"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// A marker name is journaled once: a marker dropped under a name the
// journal already holds is not taken. It is removed from the task
// directory without a record (no sequence number is used), the daemon
// logs it, and a marker_refused event names it (file=<name>) with the
// seq of the record that holds the name (journaled=<seq>) and the reason:
// the event is the only trace, since no record is written, and the agent
// that reused the name reads it there. An agent must never reuse a name
// (docs/PROTOCOL.md); this keeps one record per name when one does.
//
// The names are looked up in a set the committer builds the first time a
// commit of it has a marker to take (one ReadJournal), keeps up to date
// as it takes markers, and drops with the rest of its cache (forget): a
// start, or a task with no marker, reads no journal for it. It holds a
// 64-bit hash of each name with its seq, not the names themselves; a hash
// found is checked against the record itself, so two names that share a
// hash are never confused.

// journaledNames is the set of the names a task's journal holds.
type journaledNames struct {
	seed maphash.Seed
	seqs map[uint64]int64 // hash of a name → the seq of its record
}

// reasonReused is the reason a marker whose name is journaled is refused.
const reasonReused = "marker name already journaled: a marker name is used once; drop the marker again under a new name"

// journaledAs reports the seq of the record that holds marker name, if
// the journal holds one, building the set of journaled names when the
// committer has none.
func (t *committer) journaledAs(name string) (int64, bool, error) {
	if t.names == nil {
		recs, err := journalRecords(t.s, t.id)
		if err != nil {
			return 0, false, err
		}
		t.names = &journaledNames{seed: maphash.MakeSeed(), seqs: make(map[uint64]int64, len(recs))}
		for _, r := range recs {
			t.noteJournaled(r.File, r.Seq)
		}
	}
	seq, ok := t.names.seqs[hashName(t.names, name)]
	if !ok {
		return 0, false, nil
	}
	// A hash is not a name: make sure it is this one.
	file, err := recordFile(t.s, t.id, seq)
	if err != nil {
		return 0, false, err
	}
	return seq, file == name, nil
}

// noteJournaled adds the name of a record just made to the set, when
// there is one.
func (t *committer) noteJournaled(name string, seq int64) {
	if t.names != nil && name != "" {
		t.names.seqs[hashName(t.names, name)] = seq
	}
}

// hashName is the key of name in the set.
func hashName(s *journaledNames, name string) uint64 { return maphash.String(s.seed, name) }

// recordFile returns the marker name the record of seq holds: from its
// record file, or from its taken marker when the record is not written
// yet.
func recordFile(ws *Store, id string, seq int64) (string, error) {
	l, err := listJournal(ws, id)
	if err != nil {
		return "", err
	}
	if name, ok := l.records[seq]; ok {
		recs, err := readRecordFile(ws, id, l.files[name])
		if err != nil {
			return "", fmt.Errorf("read journal of task %s: %w", id, err)
		}
		return recs[seq-l.files[name].seq].File, nil
	}
	if tk, ok := l.taken[seq]; ok {
		return tk.marker, nil
	}
	return "", nil
}

// refuseReused refuses marker p, whose name the record of seq already
// holds: it says so in events.log, then removes the marker. When the event
// cannot be appended the marker stays, to be refused again by a later
// commit.
func (t *committer) refuseReused(ctx context.Context, dirs taskDirs, p pendingMarker, ex examined, seq int64) {
	s := t.s
	m := ex.judged.Record(seq, s.Now()).Marker
	attrs := map[string]string{"file": p.name, "journaled": fmt.Sprint(seq), "reason": reasonReused}
	if m.AgentID != "" {
		attrs["agent"] = m.AgentID
	}
	var args []string
	if m.SubtaskID != "" {
		args = []string{m.SubtaskID}
	}
	ev := workspace.Event{Time: s.Now().UTC(), Name: machine.EventMarkerRefused, TaskID: t.id, Args: args, Attrs: attrs}
	if err := s.AppendEvents(ctx, t.id, []workspace.Event{ev}); err != nil {
		s.log().Warn("marker name already journaled; marker left until its refusal can be logged", "task", t.id, "marker", p.name, "journaled", seq, "err", err)
		return
	}
	t.events = append(t.events, ev)
	err := dirs.td.Remove(p.name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		err = dirs.td.RemoveAll(p.name) // a directory named like a marker
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log().Warn("remove refused marker", "task", t.id, "marker", p.name, "err", err)
		return
	}
	s.log().Warn("marker name already journaled; marker removed, not taken", "task", t.id, "marker", path.Join(workspace.TaskDir(t.id), p.name), "journaled", seq)
}
