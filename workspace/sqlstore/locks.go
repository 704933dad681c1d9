package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// A database store names its locks as the file tree names its lock files.

// TaskLock is the name of a whole task's lock, as on files.
const TaskLock = "task"

// CleanupLock is the name of the lock a retention run holds, as on files.
const CleanupLock = "tasks/.locks/cleanup.lock"

// LockName is the name of a task's lock, the path its lock file has in a
// tree.
func LockName(taskID, lock string) string { return path.Join("tasks", taskID, ".locks", lock+".lock") }

// TaskLockName checks a task's lock request (name "" is the whole
// task's lock) and returns the lock's name within the task.
func TaskLockName(taskID, name string) (string, error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return "", err
	}
	if name == "" {
		return TaskLock, nil
	}
	if err := workspace.ValidateID("lock name", name); err != nil {
		return "", err
	}
	return name, nil
}

// LockTaskNamed takes a task's lock named name, or the whole task's lock
// when name is "", waiting up to the settings' lock timeout: a timeout is
// ErrLocked naming the holder, ctx ending first its error. A missing task
// is ErrNotFound, a bad task id or name ErrInvalid.
func (s *Store) LockTaskNamed(ctx context.Context, taskID, name, agent string) (workspace.Lock, error) {
	lock, err := TaskLockName(taskID, name)
	if err != nil {
		return nil, err
	}
	if err := RequireTask(ctx, s.r, taskID); errors.Is(err, workspace.ErrNotFound) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "lock task " + taskID, Msg: "no such task", Field: workspace.FieldTask}
	} else if err != nil {
		return nil, fmt.Errorf("lock task %s: %w", taskID, err)
	}
	return s.d.Lock(ctx, LockName(taskID, lock), taskID, lock, agent, time.Duration(s.Settings().LockTimeout))
}

// ParseHolder decodes a holder the locks table recorded; nil when it
// does not parse.
func ParseHolder(raw string) *locking.Holder {
	var h locking.Holder
	if json.Unmarshal([]byte(raw), &h) != nil {
		return nil
	}
	return &h
}
