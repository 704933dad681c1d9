package files

import (
	"errors"
	"fmt"
	"os"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// taskLook is the task directory opened once for the looks of one commit
// that may find the task with nothing to do: its marker names, state.json
// and journal/ are read through that handle (openat) rather than each
// resolved from the root again. At start, over 20,000 tasks, those looks
// are the daemon's work, and resolving the same directories again was
// half of their system calls. It is opened when first needed (a wake
// that names markers still present needs none of it).
type taskLook struct {
	ws  *Store
	id  string
	td  *os.Root // the task directory, when open already
	dir *os.File
	err error
}

func (l *taskLook) open() (*os.File, error) {
	if l.dir == nil && l.err == nil {
		if l.td != nil {
			l.dir, l.err = openDir(l.td)
		} else {
			l.dir, l.err = l.ws.Root().Open(workspace.TaskDir(l.id))
		}
	}
	return l.dir, l.err
}

func (l *taskLook) close() {
	if l.dir != nil {
		l.dir.Close()
	}
}

// markerNames lists the marker names in the task directory.
func (l *taskLook) markerNames() ([]string, error) {
	d, err := l.open()
	if err != nil {
		return nil, err
	}
	return readMarkerNames(d)
}

// lstatState is the Lstat of state.json.
func (l *taskLook) lstatState() (os.FileInfo, error) {
	if l.td != nil {
		return l.td.Lstat("state.json")
	}
	return l.ws.Root().Lstat(statePath(l.id))
}

// state reads state.json (a symlink is ErrUnsafe, a missing file
// ErrNotFound).
func (l *taskLook) state() ([]byte, error) {
	d, err := l.open()
	if err != nil {
		return nil, err
	}
	return agentfile.ReadAt(d, "state.json", int64(l.ws.Settings().Limits.MaxFileBytes))
}

// journal lists journal/; a missing one is an empty journal.
func (l *taskLook) journal() (journalListing, error) {
	d, err := l.open()
	if err != nil {
		return newJournalListing(), err
	}
	f, err := agentfile.OpenDirAt(d, JournalDir)
	if errors.Is(err, workspace.ErrNotFound) {
		return newJournalListing(), nil
	}
	if err != nil {
		return newJournalListing(), fmt.Errorf("list journal of task %s: %w", l.id, err)
	}
	defer f.Close()
	return readJournalListing(f, l.id)
}
