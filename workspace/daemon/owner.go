package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// owner is everything the daemon knows about one task, and the one place
// it is kept: the loop's map of owners is the only map keyed by task id.
// Only the loop's goroutine touches an owner; the store's committer it
// holds is called by one commit goroutine at a time (busy).
type owner struct {
	id string
	c  workspace.Committer

	followed   bool // the wake-up source looks at it
	unwatched  bool // following it failed: the rescans serve it
	finished   bool // completed, failed or cancelled: not followed
	refused    bool // the store will not serve it (a symlink in tasks/)
	queued     bool // woken, waiting for a commit
	busy       bool // a commit is under way
	scan       uint64
	markers    []string  // the markers that woke it since its last commit
	all        bool      // look at all of it
	waitTill   time.Time // look again then (a marker's wait, a retry)
	stopped    error     // why its last commit failed; retried with backoff
	failures   int
	since      time.Time // when it stopped
	progress   []workspace.InProgress
	settleWork func() error // what its commits left to settle
}

// maxHints bounds the marker names an owner remembers; past it the task
// is looked at whole.
const maxHints = 64

// hint adds the markers that woke the owner.
func (o *owner) hint(markers []string, all bool) {
	switch {
	case o.all:
	case all || len(o.markers)+len(markers) > maxHints:
		o.all, o.markers = true, nil
	default:
		o.markers = append(o.markers, markers...)
	}
}

// How soon a task stopped by an error is tried again: retryFirst after
// the first failure, twice as long after each next one, at most retryMax,
// so that once a full disk or a read-only filesystem is mended the task
// goes on within a second or two.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// finish applies what a commit said to its owner.
func (l *loop) finish(ctx context.Context, r done) {
	d, o, a := l.d, r.o, r.a
	o.busy = false
	l.busy--
	if l.tasks[o.id] != o {
		return // dropped while it committed
	}
	if a.Gone && r.err == nil {
		l.drop(o.id)
		return
	}
	if a.Refused != nil {
		if !o.refused {
			d.log.Warn("task entry refused", "task", o.id, "err", a.Refused)
			o.refused, l.changed = true, true
		}
		l.unfollow(o)
		return
	}
	if o.refused {
		o.refused, l.changed = false, true
	}
	switch {
	case r.err != nil && ctx.Err() == nil && !errors.Is(r.err, workspace.ErrFenced):
		l.stop(o, r.err)
	case r.err == nil && o.stopped != nil:
		d.log.Info("task resumed", "task", o.id, "after", d.now().Sub(o.since).Round(time.Millisecond), "retries", o.failures)
		o.stopped, o.failures, o.since = nil, 0, time.Time{}
		l.changed = true
	}
	if a.Taken > 0 {
		d.log.Info("markers taken", "task", o.id, "count", a.Taken, "journal_seq", a.Seq)
	}
	if a.Stopped != nil {
		d.log.Warn("apply markers", "task", o.id, "err", a.Stopped)
	}
	if r.err == nil {
		o.progress = a.Progress
	}
	if !a.Partial {
		o.waitTill = a.WaitUntil // the markers waiting wait as they did otherwise
	}
	if o.stopped != nil {
		retry := d.now().Add(min(retryFirst<<min(o.failures-1, 16), retryMax))
		if o.waitTill.IsZero() || retry.Before(o.waitTill) {
			o.waitTill = retry
		}
	}
	if !o.waitTill.IsZero() {
		l.waitFor(o.waitTill)
	}
	o.finished = a.Finished && o.waitTill.IsZero() && r.err == nil
	if o.finished {
		l.unfollow(o)
	} else if !o.followed {
		l.follow(o)
	}
	if a.Settle != nil {
		o.settleWork = a.Settle
		l.settle.soon(l)
	}
	if r.err == nil && (a.More || o.all || len(o.markers) > 0) {
		l.wake(o, nil, a.More) // more waiting, or woken while it committed
	}
}

// stop notes that committing o failed with err: it is retried with
// backoff and status names it. The error is logged when it is new, not at
// every retry.
func (l *loop) stop(o *owner, err error) {
	if o.stopped == nil || o.stopped.Error() != err.Error() {
		args := []any{"task", o.id, "err", err}
		if h := hintOf(err); h != "" {
			args = append(args, "hint", h)
		}
		l.d.log.Error("task stopped, retrying", args...)
	}
	if o.stopped == nil {
		o.since = l.d.now()
	}
	o.stopped = err
	o.failures++
	l.changed = true
}

// hintOf is how to mend what err says: the store's hint, else the
// machine's (a full disk, a read-only filesystem).
func hintOf(err error) string {
	var we *workspace.Error
	if errors.As(err, &we) && we.Hint != "" {
		return we.Hint
	}
	return workspace.FaultHint(err)
}

// follow asks the wake-up source to look at o's markers. A task gone
// meanwhile is not followed and not counted: its next commit says so.
func (l *loop) follow(o *owner) {
	if o.followed {
		return
	}
	err := l.wk.Follow(o.id)
	switch {
	case err == nil:
		l.watchable(o)
		o.followed = true
	case errors.Is(err, workspace.ErrNotFound):
		l.watchable(o)
	default:
		// Without a watch the task is still served by the rescans; the
		// tasks left so are counted and said once (see sayUnwatched).
		if !o.unwatched {
			o.unwatched = true
			l.unwatched++
			l.changed = true
		}
		l.watchErr = err
	}
}

func (l *loop) unfollow(o *owner) {
	l.watchable(o)
	if o.followed {
		l.wk.Unfollow(o.id)
		o.followed = false
	}
}

// watchable takes o out of the count of tasks whose follow failed.
func (l *loop) watchable(o *owner) {
	if o.unwatched {
		o.unwatched = false
		l.unwatched--
		l.changed = true
	}
}

// sayUnwatched logs, when it changed, how many active tasks have no
// watch: once with a count, not once per task per rescan.
func (l *loop) sayUnwatched() {
	if l.unwatched == l.said {
		return
	}
	l.said = l.unwatched
	if l.unwatched == 0 {
		l.d.log.Info("every active task directory is watched again")
		return
	}
	args := []any{"count", l.unwatched, "err", l.watchErr}
	if h := hintOf(l.watchErr); h != "" {
		args = append(args, "hint", h)
	}
	l.d.log.Warn("task directories not watched; their markers are taken by the rescans", args...)
}

// drop forgets a task that is gone.
func (l *loop) drop(id string) {
	if o := l.tasks[id]; o != nil {
		l.unfollow(o)
		delete(l.tasks, id)
		l.changed = true
	}
}
