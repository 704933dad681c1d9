package files

import (
	"context"
	"errors"
	"os"
	"path"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// ReadStateHeadIn reads the head of task id's state.json (ParseStateHead)
// through dir, the task's open directory: one openat(2), never following
// a symlink. A missing state.json is ErrNotFound.
func (w *Store) ReadStateHeadIn(dir *os.File, id string) (workspace.StateHead, error) {
	data, err := agentfile.ReadAt(dir, "state.json", int64(w.settings.Limits.MaxFileBytes))
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.StateHead{}, workspace.NotFoundf("state of task "+id, "start the daemon to have it written", "no state.json yet")
	}
	if err != nil {
		return workspace.StateHead{}, err
	}
	return workspace.ParseStateHead(id, data)
}

// ReadStateHead reads the head of state.json (workspace.ParseStateHead),
// with ReadState's errors.
func (w *Store) ReadStateHead(ctx context.Context, id string) (workspace.StateHead, error) {
	_, data, err := w.stateFile(id)
	if err != nil {
		return workspace.StateHead{}, err
	}
	return workspace.ParseStateHead(id, data)
}

// stateFile reads task id's state.json and returns its name in the tree;
// ErrNotFound before the daemon's first write.
func (w *Store) stateFile(id string) (string, []byte, error) {
	if err := w.checkTask(id); err != nil {
		return "", nil, err
	}
	name := path.Join(workspace.TaskDir(id), "state.json")
	data, err := w.ReadFile(name)
	if errors.Is(err, workspace.ErrNotFound) {
		return name, nil, workspace.NotFoundf("state of task "+id, "start the daemon to have it written", "no state.json yet")
	}
	return name, data, err
}
