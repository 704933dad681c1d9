package daemon

import (
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// Observer is told what the daemon does, for its metrics (workspaced
// serve counts it for Prometheus). Commits call Committed from their own
// goroutines, the chores Cleaned and Friction from theirs, the loop the
// rest: an Observer is safe for concurrent use, and cheap, since
// Committed is on the path of every marker.
type Observer interface {
	// Leading: the daemon began to lead, with the leadership's epoch.
	Leading(epoch int64)
	// Stepped: the daemon no longer leads (it stops, lost the lead, or
	// waits to lead again).
	Stepped()
	// Committed: one commit of a task took took, applied a (its Marks,
	// Events and EventsLost) and failed with err (nil: it succeeded).
	Committed(took time.Duration, a workspace.Applied, err error)
	// Pending: tasks woken and waiting for a commit, and commits under
	// way, after each turn of the loop.
	Pending(queued, committing int)
	// Rescanned: a full scan of every task, after the start-up one.
	Rescanned()
	// Cleaned: a retention run ended, having removed removed tasks
	// (err: it failed).
	Cleaned(removed int, err error)
	// Friction: the detectors recorded entries.
	Friction(entries []friction.Entry)
}

// nopObserver observes nothing: a Config without an Observer.
type nopObserver struct{}

func (nopObserver) Leading(int64)                                     {}
func (nopObserver) Stepped()                                          {}
func (nopObserver) Committed(time.Duration, workspace.Applied, error) {}
func (nopObserver) Pending(int, int)                                  {}
func (nopObserver) Rescanned()                                        {}
func (nopObserver) Cleaned(int, error)                                {}
func (nopObserver) Friction([]friction.Entry)                         {}
