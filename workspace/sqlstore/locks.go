package sqlstore

import (
	"path"

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

// NoTaskToLock is the ErrNotFound of a lock of a task that does not
// exist.
func NoTaskToLock(taskID string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "lock task " + taskID, Msg: "no such task", Field: workspace.FieldTask}
}
