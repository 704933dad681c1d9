package workspace

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// LeadOptions configure Lead.
type LeadOptions struct {
	// Holder names this process in the leader's record (host:pid when
	// empty).
	Holder string
	// Standby waits for the leader to go instead of failing.
	Standby bool
	// Retry keeps trying while the store is out of reach, even without
	// Standby (a lease that lapsed is taken again once the store is
	// back, unless another daemon has it).
	Retry bool
	// TTL is how long a lease runs without renewal, on a store that
	// leads by lease (zero: the store's default).
	TTL time.Duration
	// Strict refuses a store it cannot trust (a tree on NFS, SMB or
	// FUSE) instead of warning.
	Strict bool
	// Logger receives what the leadership has to say (nil: discarded).
	Logger *slog.Logger
	// Waiting, if set, is called when Standby finds another process
	// leading and begins to wait for it to go (once per Lead call).
	Waiting func()
}

// Leadership is a store's single-writer role, held by one process at a
// time.
type Leadership interface {
	// Epoch is the leadership's fencing token: it grows every time
	// another process takes the lead (0 where the store needs none).
	Epoch() int64
	// Done is closed when the leadership is lost; Err then says why
	// (ErrFenced: another took over; ErrLeaseLapsed: the lease could
	// not be renewed in time).
	Done() <-chan struct{}
	Err() error
	// Release gives the leadership up, so a standby takes over at once.
	Release(ctx context.Context) error
}

// Why a leadership ends.
var (
	// ErrFenced: another process took over as the single writer; a
	// commit fenced by the old leadership writes nothing.
	ErrFenced = errors.New("another daemon took over the workspace (lease epoch changed)")
	// ErrLeaseLapsed: the lease could not be renewed before it expired
	// (the database out of reach); another daemon may have taken over.
	ErrLeaseLapsed = errors.New("the lease could not be renewed before it expired")
)

// WakeOptions configure a wake-up source.
type WakeOptions struct {
	// Mode names the source where a store has several (the file tree:
	// "inotify" or "poll"); empty is the store's default.
	Mode string
	// Interval is how often a polling source looks (zero: its default).
	Interval time.Duration
}

// Wake is one wake-up: a task to look at.
type Wake struct {
	// Task is the task to look at; empty with All means every task (the
	// source may have missed something: an overflow, a reconnection).
	Task string
	// Markers names the markers that woke Task, when the source knows
	// them (a hint: the commit may look only for those); empty means
	// look at all of it.
	Markers []string
	// All says to look at the whole task (or, with no Task, at every
	// task).
	All bool
	// Err is trouble the source met and got over; it goes on.
	Err error
}

// Wakeups is a running wake-up source. C delivers wake-ups until the
// source's context ends; Follow and Unfollow say which tasks are active
// (a source that watches each task separately watches only those; one
// that sees every task ignores them). Follow, Unfollow and Close are
// called from the goroutine that reads C.
type Wakeups interface {
	C() <-chan Wake
	// Follow starts looking at an active task's markers; ErrNotFound
	// when the task is gone. Any other error leaves the task to the
	// rescans (the error says why, and its Hint how to mend it).
	Follow(taskID string) error
	Unfollow(taskID string)
	// Mode names the source ("inotify", "poll", "listen").
	Mode() string
	// Held is how many watches the source holds (a descriptor or a
	// kernel watch each), for status.
	Held() int
	Close() error
}

// CommitRequest is one call of Committer.Commit.
type CommitRequest struct {
	// Lead fences the commit: a store that leads by epoch commits only
	// while Lead's epoch is still the current one (else ErrFenced, and
	// nothing is written).
	Lead Leadership
	// Max is the most markers one commit takes; more waiting makes
	// Applied.More true.
	Max int
	// Markers are the names that woke the task (a hint; empty: look at
	// all of it).
	Markers []string
}

// Applied is what one commit did, and what the daemon needs to know of
// the task afterwards.
type Applied struct {
	// Taken is how many markers were journaled (applied or rejected),
	// Rejected how many of them only as an error.
	Taken, Rejected int
	// Seq is the journal_seq of the state written or read.
	Seq int64
	// Events are the events the commit made durable, in order.
	Events []Event
	// More: markers are still waiting past Max; commit again.
	More bool
	// WaitUntil, when set, is when a marker that is not complete yet
	// (it may still be being written) is to be looked at again.
	WaitUntil time.Time
	// Partial: only the markers named in the request were looked for,
	// and none was there; nothing is known of others.
	Partial bool
	// Finished: the task is completed, failed or cancelled.
	Finished bool
	// Gone: the task no longer exists.
	Gone bool
	// Refused, when set, is why the store will not serve this task (a
	// task entry that is a symlink, not a directory).
	Refused error
	// Stopped says why the state machine stopped before the last marker
	// taken (a plan it cannot load); the rest wait for the next commit.
	Stopped error
	// Progress lists the task's subtasks in progress, for the timeout
	// detector.
	Progress []InProgress
	// Settle, when set, is work the commit left to be done a moment
	// later, beside later commits (the file tree makes a burst's
	// records durable with one flush, and removes the taken markers).
	// It may be run again after an error.
	Settle func() error
	// Marks describes each marker whose record the state written
	// reflects, for the daemon's metrics (nil where the store does not
	// tell).
	Marks []Mark
	// EventsLost is how many of Events could not be appended to the
	// task's event log (the state was written all the same).
	EventsLost int
}

// InProgress is one subtask in progress, as the timeout detector sees it.
type InProgress struct {
	TaskID     string
	SubtaskID  string
	Complexity string // low | medium | high; anything else counts as medium
	StartedAt  time.Time
}

// Committer takes one task's markers. See Served.
type Committer interface {
	// Commit takes up to req.Max waiting markers of the task exactly
	// once, journals them with the next sequence numbers, folds them
	// with the state machine and makes the new state, its backup and its
	// events durable together (a task with no state yet gets its first).
	// A task with nothing to do commits nothing.
	Commit(ctx context.Context, req CommitRequest) (Applied, error)
}

// Mark is what a commit tells the daemon's metrics of one marker it
// applied: its kind, its verdict, and when it was dropped.
type Mark struct {
	// Kind is KindClaim or KindDone.
	Kind string
	// Verdict is one of the Verdict… constants, as an agent reads it
	// back from the state written.
	Verdict string
	// Dropped is when the marker was dropped (the file's modification
	// time; a row's dropped_at); zero when unknown.
	Dropped time.Time
}
