package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// WakePoll checks the wake-up mode a daemon asks a store for (mode, or
// ""; the store is named by its kind in the message, with hint) and
// returns the poll: opt.Interval, or def when zero.
func WakePoll(opt workspace.WakeOptions, mode, kind, hint string, def time.Duration) (time.Duration, error) {
	if opt.Mode != "" && opt.Mode != mode {
		return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve", Msg: fmt.Sprintf("no wake-up mode %q on %s", opt.Mode, kind), Hint: hint}
	}
	if opt.Interval <= 0 {
		return def, nil
	}
	return opt.Interval, nil
}

// Wakeups is the workspace.Wakeups of a database store: one goroutine,
// run, sends the wake-ups until Close. Every task is seen on the one
// channel, so Follow and Unfollow have nothing to do.
type Wakeups struct {
	c      chan workspace.Wake
	cancel context.CancelFunc
	done   chan struct{}
	mode   string
}

// StartWakeups starts run in a goroutine of its own, named mode, with
// the channel it sends on; Close ends its context and waits for it.
func StartWakeups(ctx context.Context, mode string, run func(ctx context.Context, c chan<- workspace.Wake)) *Wakeups {
	ctx, cancel := context.WithCancel(ctx)
	w := &Wakeups{c: make(chan workspace.Wake, 1024), cancel: cancel, done: make(chan struct{}), mode: mode}
	go func() {
		defer close(w.done)
		defer close(w.c)
		run(ctx, w.c)
	}()
	return w
}

// C is the channel of wake-ups; it is closed once Close returns.
func (w *Wakeups) C() <-chan workspace.Wake { return w.c }

// Follow has nothing to do: every task is seen already.
func (w *Wakeups) Follow(string) error { return nil }

// Unfollow has nothing to do.
func (w *Wakeups) Unfollow(string) {}

// Mode names the source.
func (w *Wakeups) Mode() string { return w.mode }

// Held is 1: the source holds one watch or connection.
func (w *Wakeups) Held() int { return 1 }

// Close stops the source and waits for its goroutine.
func (w *Wakeups) Close() error {
	w.cancel()
	<-w.done
	return nil
}

// PollWaiting sends each task waiting names (the tasks with markers
// waiting), or its error unless ctx has ended.
func PollWaiting(ctx context.Context, c chan<- workspace.Wake, waiting func(context.Context) ([]string, error)) {
	ids, err := waiting(ctx)
	if err != nil {
		if ctx.Err() == nil {
			Send(ctx, c, workspace.Wake{Err: fmt.Errorf("look for markers: %w", err)})
		}
		return
	}
	for _, id := range ids {
		Send(ctx, c, workspace.Wake{Task: id})
	}
}

// Send sends w on c unless ctx ends first.
func Send(ctx context.Context, c chan<- workspace.Wake, w workspace.Wake) {
	select {
	case c <- w:
	case <-ctx.Done():
	}
}
