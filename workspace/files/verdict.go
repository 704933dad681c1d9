package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// The verdict on a marker is read from the files alone, the way an agent
// in any language can read it: the journal record whose file is the
// marker's name says when it was taken (its seq) and whether the daemon
// rejected it on reading; once state.json's journal_seq reaches that seq,
// machine.Judge reads the verdict from the state.

// ReadVerdict reads where the marker name (a file name in the task
// directory) stands, and its verdict once decided. after is a journal seq
// the marker's record is known to follow (the state's journal_seq when it
// was dropped; 0 when unknown): only records past it are read. It only
// reads, and is safe to call while the daemon works.
func ReadVerdict(ws *workspace.Workspace, taskID, name string, after int64) (workspace.Verdict, string, error) {
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
	if err != nil || where != workspace.MarkerDecided {
		return workspace.Verdict{}, where, err
	}
	st, err := ws.ReadState(context.Background(), taskID)
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

// findRecord finds the journal record of the marker name among the records
// past after: MarkerDecided with the record once it is written,
// MarkerTaken while the marker is journaled but its record not yet
// written, MarkerMissing when the journal has neither (workspace's
// Marker… constants).
func findRecord(ws *workspace.Workspace, taskID, name string, after int64) (workspace.JournalRecord, string, error) {
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

// Serving reports whether a daemon serves the workspace, by probing its
// lock (which takes and creates nothing).
func Serving(ws *workspace.Workspace) (bool, error) {
	held, _, err := locking.Held(LockPath(ws.Dir()))
	return held, err
}

// WaitVerdict waits for the daemon's verdict on the marker name of a task
// (see ReadVerdict for after), until ctx is done. It fails with
// workspace.ErrNotServing when no daemon serves the root while the marker
// is undecided, and says where the marker was when ctx ended
// (workspace.Wait over the file tree).
func WaitVerdict(ctx context.Context, ws *workspace.Workspace, taskID, name string, after int64) (workspace.Verdict, error) {
	return workspace.Wait(ctx, fileVerdicts{ws}, taskID, name, after)
}

// FileVerdicts is the file tree ws as a VerdictSource.
func FileVerdicts(ws *workspace.Workspace) workspace.VerdictSource { return fileVerdicts{ws} }

type fileVerdicts struct{ ws *workspace.Workspace }

func (f fileVerdicts) ReadVerdict(taskID, name string, after int64) (workspace.Verdict, string, error) {
	return ReadVerdict(f.ws, taskID, name, after)
}
func (f fileVerdicts) Serving() (bool, error) { return Serving(f.ws) }
func (f fileVerdicts) Where() string          { return f.ws.Dir() }
