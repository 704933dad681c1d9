package files

import (
	"context"
	"path"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// FrictionLog returns the workspace's friction log (friction/friction.json)
// with its lock timeout and file mode; agent names the writer in the lock's
// holder record.
func (w *Store) FrictionLog(agent string) *friction.Log {
	return &friction.Log{Root: w.root, RootDir: w.dir, Timeout: time.Duration(w.settings.LockTimeout),
		Agent: agent, Now: w.now, FileMode: w.FilePerm()}
}

// FrictionConfig is the detectors' configuration from workspace.json.
func (w *Store) FrictionConfig(ctx context.Context) friction.Config {
	return w.settings.Friction.Config()
}

// NoteFriction appends a friction_recorded event to the events.log of each
// of tasks that exists: `friction_recorded <task> <friction_id> type=T
// occurrences=N new=true|false`. It is called after an entry is recorded
// or merged, with the tasks that recording was about. Tasks that no longer
// exist (pruned, anonymised) are skipped.
func (w *Store) NoteFriction(ctx context.Context, e friction.Entry, isNew bool, tasks []string) {
	for _, t := range tasks {
		if !w.IsTaskDir(t) || !w.exists(path.Join(workspace.TaskDir(t), "task.json")) {
			continue
		}
		_ = w.AppendEvent(ctx, workspace.FrictionRecorded(e, isNew, t))
	}
}
