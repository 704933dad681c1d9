package workspace

import "path"

// TaskLockPath is the relative path of a task's lock file.
func TaskLockPath(taskID string) string { return path.Join("tasks", taskID, ".locks", "task.lock") }
