package files

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// The verdict on a marker is read from the files alone, the way an agent
// in any language can read it: the journal record whose file is the
// marker's name says when it was taken (its seq) and whether the daemon
// rejected it on reading; once state.json's journal_seq reaches that seq,
// machine.Judge reads the verdict from the state. A marker whose name the
// journal held already is refused without a record (names.go): gone from
// the task directory with no record past after, it is found in
// events.log's marker_refused line, which the daemon appends before it
// removes the marker.

// ReadVerdict reads where the marker name (a file name in the task
// directory) stands, and its verdict once decided: for a marker refused
// for its reused name, machine.JudgeReused's. after is a journal seq
// the marker's record is known to follow (the state's journal_seq when it
// was dropped; 0 when unknown): only records past it are read. It only
// reads, and is safe to call while the daemon works.
func (ws *Store) ReadVerdict(taskID, name string, after int64) (workspace.Verdict, string, error) {
	if _, ok := workspace.IsMarkerName(name); !ok || path.Base(name) != name {
		return workspace.Verdict{}, "", fmt.Errorf("%q is not the file name of a marker", name)
	}
	_, err := ws.Root().Lstat(markerPath(taskID, name))
	switch {
	case err == nil:
		return workspace.Verdict{}, workspace.MarkerWaiting, nil
	case !errors.Is(err, fs.ErrNotExist):
		return workspace.Verdict{}, "", fmt.Errorf("look for marker %s: %w", name, err)
	}
	rec, where, err := findRecord(ws, taskID, name, after)
	if err == nil && where == workspace.MarkerMissing {
		return readRefusal(ws, taskID, name)
	}
	if err != nil || where != workspace.MarkerDecided {
		return workspace.Verdict{}, where, err
	}
	st, err := ws.readVerdictState(taskID, rec.Marker.SubtaskID, rec.Seq)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Verdict{}, workspace.MarkerTaken, nil
	}
	if err != nil {
		return workspace.Verdict{}, "", err
	}
	if st.JournalSeq < rec.Seq {
		return workspace.Verdict{}, workspace.MarkerTaken, nil
	}
	return machine.Judge(st, rec, name), workspace.MarkerDecided, nil
}

// readVerdictState reads of the task's state.json what the verdict on a
// marker naming subtaskID, journaled as seq, needs
// (workspace.ParseVerdictState). state.json is replaced whole by a
// rename, so what is read is a state the daemon committed. A state whose
// journal_seq, read from its last bytes (workspace.StateTailSeq), is
// before seq is returned with that journal_seq alone: a waiter woken by
// the writes that precede the state's reads it at the cost of a copy.
func (ws *Store) readVerdictState(taskID, subtaskID string, seq int64) (workspace.State, error) {
	_, data, err := ws.stateFile(taskID)
	if err != nil {
		return workspace.State{}, err
	}
	if tail, ok := workspace.StateTailSeq(data); ok && tail < seq {
		// A state written before the record's: nothing to scan it for.
		return workspace.State{JournalSeq: tail}, nil
	}
	return workspace.ParseVerdictState(taskID, data, subtaskID, seq)
}

// findRecord finds the journal record of the marker name among the records
// past after: MarkerDecided with the record once it is written,
// MarkerTaken while the marker is journaled but its record not yet
// written, MarkerMissing when the journal has neither (workspace's
// Marker… constants).
func findRecord(ws *Store, taskID, name string, after int64) (workspace.JournalRecord, string, error) {
	l, err := listJournal(ws, taskID)
	if err != nil {
		return workspace.JournalRecord{}, "", err
	}
	for seq, e := range l.taken {
		if e.marker != name || seq <= after {
			continue
		}
		if _, recorded := l.records[seq]; !recorded {
			return workspace.JournalRecord{}, workspace.MarkerTaken, nil
		}
	}
	// Newest first: the record sought is most likely among the last.
	files := make([]journalEntry, 0, len(l.files))
	for _, e := range l.files {
		if e.last > after {
			files = append(files, e)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].seq > files[j].seq })
	for _, e := range files {
		recs, err := readRecordFile(ws, taskID, e)
		if err != nil {
			return workspace.JournalRecord{}, "", fmt.Errorf("read journal of task %s: %w", taskID, err)
		}
		for _, r := range recs {
			if r.File == name && r.Seq > after {
				return r, workspace.MarkerDecided, nil
			}
		}
	}
	return workspace.JournalRecord{}, workspace.MarkerMissing, nil
}

// readRefusal is where the marker name stands when it is neither in the
// task directory nor journaled past after: decided, refused for its
// reused name, when events.log says the daemon refused it so; else
// missing.
func readRefusal(ws *Store, taskID, name string) (workspace.Verdict, string, error) {
	journaled, subtask, found, err := refusedAs(ws, taskID, name)
	if err != nil || !found {
		return workspace.Verdict{}, workspace.MarkerMissing, err
	}
	st, err := ws.readVerdictState(taskID, subtask, -1)
	if err != nil && !errors.Is(err, workspace.ErrNotFound) {
		return workspace.Verdict{}, "", err
	}
	return machine.JudgeReused(st, taskID, name, subtask, journaled), workspace.MarkerDecided, nil
}

// refusedAs looks in the task's events.log for the marker_refused line
// of a marker named name refused for its reused name (it carries
// journaled=<seq>): the seq of the record that holds the name, and the
// subtask the marker named. It reads the whole log, which only a marker
// gone unjudged makes it do.
func refusedAs(ws *Store, taskID, name string) (journaled int64, subtask string, found bool, err error) {
	f, err := ws.openEventsLog(taskID, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("read events of task %s: %w", taskID, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, rerr := br.ReadString('\n')
		// A last line without its newline is still being written.
		if strings.HasSuffix(line, "\n") && strings.Contains(line, " "+machine.EventMarkerRefused+" ") {
			if seq, sub, ok := reusedRefusal(line, name); ok {
				journaled, subtask, found = seq, sub, true
			}
		}
		if rerr == io.EOF {
			return journaled, subtask, found, nil
		}
		if rerr != nil {
			return 0, "", false, fmt.Errorf("read events of task %s: %w", taskID, rerr)
		}
	}
}

// reusedRefusal reads an events.log line: the seq and subtask of a
// marker named name refused for its reused name, when the line is one.
func reusedRefusal(line, name string) (int64, string, bool) {
	e, err := workspace.ParseEvent(strings.TrimRight(line, "\r\n"))
	if err != nil || e.Name != machine.EventMarkerRefused || e.Attrs["file"] != name {
		return 0, "", false
	}
	seq, err := strconv.ParseInt(e.Attrs["journaled"], 10, 64)
	if err != nil || seq <= 0 {
		return 0, "", false
	}
	var sub string
	if len(e.Args) > 0 {
		sub = e.Args[0]
	}
	return seq, sub, true
}

// Serving reports whether a daemon serves the workspace, by probing its
// lock (which takes and creates nothing).
func (ws *Store) Serving() (bool, error) {
	held, _, err := locking.Held(LockPath(ws.Dir()))
	return held, err
}

var _ workspace.VerdictSource = (*Store)(nil)

// Where names the store's tree in messages: its directory.
func (s *Store) Where() string { return s.Dir() }
