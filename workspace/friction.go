package workspace

import (
	"path"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/friction"
)

// FrictionLog returns the workspace's friction log (friction/friction.json)
// with its lock timeout and file mode; agent names the writer in the lock's
// holder record.
func (w *Workspace) FrictionLog(agent string) *friction.Log {
	return &friction.Log{Root: w.root, RootDir: w.dir, Timeout: time.Duration(w.settings.LockTimeout),
		Agent: agent, Now: w.now, FileMode: w.FilePerm()}
}

// FrictionConfig is the detectors' configuration from workspace.json.
func (w *Workspace) FrictionConfig() friction.Config {
	f := w.settings.Friction
	return friction.Config{RevisionLimit: f.RevisionLimit, ReviewerRepeats: f.ReviewerRepeats, FailureRepeats: f.FailureRepeats,
		TimeoutLow: time.Duration(f.TimeoutLow), TimeoutMedium: time.Duration(f.TimeoutMedium), TimeoutHigh: time.Duration(f.TimeoutHigh)}
}

// NoteFriction appends a friction_recorded event to the events.log of each
// of tasks that exists: `friction_recorded <task> <friction_id> type=T
// occurrences=N new=true|false`. It is called after an entry is recorded
// or merged, with the tasks that recording was about. Tasks that no longer
// exist (pruned, anonymised) are skipped.
func (w *Workspace) NoteFriction(e friction.Entry, isNew bool, tasks []string) {
	for _, t := range tasks {
		if !w.IsTaskDir(t) || !w.exists(path.Join(TaskDir(t), "task.json")) {
			continue
		}
		_ = w.AppendEvent(Event{Name: "friction_recorded", TaskID: t, Args: []string{e.ID}, Attrs: map[string]string{
			"type": e.Type, "occurrences": strconv.Itoa(e.Occurrences), "new": strconv.FormatBool(isNew)}})
	}
}
