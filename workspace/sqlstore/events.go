package sqlstore

import (
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// BadTally counts the event lines of each task that do not parse, keeping
// the first error of each, in the order the tasks are first met.
type BadTally struct {
	bad []workspace.BadLines
	of  map[string]int
}

// Add counts one line of task that did not parse (err).
func (b *BadTally) Add(task string, err error) {
	i, ok := b.of[task]
	if !ok {
		if b.of == nil {
			b.of = map[string]int{}
		}
		i = len(b.bad)
		b.of[task] = i
		b.bad = append(b.bad, workspace.BadLines{TaskID: task, First: err})
	}
	b.bad[i].Count++
}

// Lines is one BadLines per task that has any (nil when none has).
func (b *BadTally) Lines() []workspace.BadLines { return b.bad }

// FollowInterval checks the task a follow of events names ("" is every
// task) and returns how often it looks: interval, or a second when zero.
func FollowInterval(taskID string, interval time.Duration) (time.Duration, error) {
	if taskID != "" {
		if err := workspace.ValidateID("task id", taskID); err != nil {
			return 0, err
		}
	}
	if interval <= 0 {
		return time.Second, nil
	}
	return interval, nil
}

// StampEvents checks the task an append names and gives each of evs that
// task and, when its time is zero, the time now gives. An empty result is
// nothing to append.
func StampEvents(taskID string, evs []workspace.Event, now func() time.Time) ([]workspace.Event, error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, nil
	}
	out := make([]workspace.Event, len(evs))
	for i, e := range evs {
		if e.Time.IsZero() {
			e.Time = now()
		}
		e.TaskID = taskID
		out[i] = e
	}
	return out, nil
}
