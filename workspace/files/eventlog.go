package files

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/workspaced/workspaced/workspace"
)

// The events of a commit: every event a journal record makes is written
// to the task's events.log once, in the order of the records, even when
// an append fails (a full disk, a read-only remount) or the daemon dies
// between the append and the state write. The argument:
//
//   - A commit appends the events of the records it folds, in record
//     order, in one write(2), before it writes the state that reflects
//     them; an append that fails fails the commit, and state.json is not
//     written. So when state.json says journal_seq J, the events of every
//     record up to J are in events.log, and a commit never derives them
//     again: the next fold starts past J.
//   - The events of the records past J may be in events.log wholly, as a
//     prefix (the last line maybe cut short by a full disk), or not at
//     all. Only a load folds records past J: a commit that failed after
//     taking markers forgets its cache, so the next one loads from disk.
//     The load derives their events again — the same ones, since the
//     state machine is deterministic in the state and the records, and an
//     event carries its record's taken_at as its time — finds how many of
//     them, from the first, events.log's tail already holds (unlogged),
//     and appends only the rest, then writes the state.
//
// A derived line is found when the tail holds the same bytes as a whole
// line, the derived lines in their order (other writers' lines may sit
// between them). The tail read is bounded (the derived lines and
// tailSlack), and the normal path reads nothing: only a load with records
// past journal_seq does. Limits: more than tailSlack bytes appended by
// others between the failed commit and the load hide the prefix, which is
// then written again; so would a line identical to the first derived one,
// to the millisecond, left by an earlier record. events.log is not
// fsynced by the commit; settle's syncfs makes it durable with the
// records (and on ext4, whose default data=ordered writes file data before
// the metadata that follows it, the fsync of state.json already does).

// tailSlack is how far back from the end of events.log, past the size of
// the derived lines, a load looks for lines a failed commit appended.
const tailSlack = 1 << 20

// replay folds the records a load found past state.json's journal_seq
// into the state, keeping of their events only those events.log does not
// hold yet. A restored state needs none of them (one state_restored event
// stands for the replay).
func (t *committer) replay(recs []workspace.JournalRecord, restored bool) (nextState, error) {
	n, err := t.fold(recs)
	if err != nil || restored {
		return n, err
	}
	n.evs, n.tornLog, err = t.unlogged(n.evs)
	return n, err
}

// unlogged returns the events of evs that events.log does not hold yet
// (see above), and whether its last line is cut short (then the rest must
// start on a line of its own). A missing log holds nothing.
func (t *committer) unlogged(evs []workspace.Event) ([]workspace.Event, bool, error) {
	if len(evs) == 0 {
		return nil, false, nil
	}
	lines := make([][]byte, len(evs))
	size := int64(0)
	for i, e := range evs {
		lines[i] = []byte(workspace.FormatEvent(e))
		size += int64(len(lines[i])) + 1
	}
	tail, whole, err := readEventsTail(t.s, t.id, size+tailSlack)
	if err != nil {
		return nil, false, fmt.Errorf("read events of task %s: %w", t.id, err)
	}
	torn := len(tail) > 0 && tail[len(tail)-1] != '\n'
	if !whole {
		// The first line read is most likely a part of one.
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		} else {
			tail = nil
		}
	}
	k := 0
	for line := range bytes.Lines(tail) {
		if k < len(lines) && bytes.Equal(bytes.TrimSuffix(line, []byte("\n")), lines[k]) {
			k++
		}
	}
	if k > 0 {
		t.s.log().Info("events already logged before a failed commit; appending the rest", "task", t.id, "logged", k, "rest", len(evs)-k)
	}
	return evs[k:], torn, nil
}

// readEventsTail reads at most n bytes from the end of a task's
// events.log, and whether that is the whole file. A missing log is empty;
// one that is no regular file (a symlink, a FIFO, a directory) is an
// error, as it is to AppendEvents.
func readEventsTail(ws *Store, id string, n int64) ([]byte, bool, error) {
	f, err := ws.openEventsLog(id, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := max(fi.Size()-n, 0)
	buf := make([]byte, fi.Size()-off)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return buf[:m], off == 0, nil
}

// endLine ends a last line of events.log that a full disk cut short, so
// that the lines appended next are whole lines of their own.
func endLine(ws *Store, id string) error {
	f, err := ws.openEventsLog(id, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("end the last line of the events of task %s: %w", id, err)
	}
	_, err = f.Write([]byte{'\n'})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("end the last line of the events of task %s: %w", id, err)
	}
	return nil
}
