package workspace

import (
	"context"
	"sync"
)

// CommitHub hands what one listener of a store hears (a watch of its
// files, a LISTEN) to every waiter of workspace.CommitSource in the
// process: one listener however many waiters there are (an MCP server
// serving many agents has many). The first waiter starts it, and it is
// stopped once the last has gone. Every store uses it: the file store, SQLite and PostgreSQL.
type CommitHub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]string // a waiter's channel → its task
	tasks  map[string]int           // a task → its waiters
	l      CommitListener           // the listener running
	cancel context.CancelFunc
}

// CommitListener is what a CommitHub runs.
type CommitListener interface {
	// Start makes the listener when a first waiter comes: it returns what
	// runs it until ctx ends (in a goroutine of the hub's), or the error
	// that leaves the waiter to its poll.
	Start(ctx context.Context) (run func(), err error)
	// Watch starts hearing task when its first waiter comes, Unwatch
	// stops when its last has gone (a listener that hears every task
	// does nothing in either).
	Watch(task string) error
	Unwatch(task string)
}

// Subscribe adds a waiter of task until ctx ends. Its channel receives
// once now and at each Wake of its task or of every task (coalesced: one
// value waits at most). l is started when no listener runs; a listener
// running serves the waiter otherwise.
func (h *CommitHub) Subscribe(ctx context.Context, task string, l CommitListener) (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		lctx, cancel := context.WithCancel(context.Background())
		run, err := l.Start(lctx)
		if err != nil {
			cancel()
			return nil, err
		}
		h.cancel = cancel // a listener ending meanwhile ends on its own
		h.subs, h.tasks, h.l = map[chan struct{}]string{}, map[string]int{}, l
		go run()
	}
	if h.tasks[task] == 0 {
		if err := h.l.Watch(task); err != nil {
			h.stopIdle()
			return nil, err
		}
	}
	h.tasks[task]++
	c := make(chan struct{}, 1)
	h.subs[c] = task
	c <- struct{}{}
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, c)
		if h.tasks[task]--; h.tasks[task] == 0 {
			delete(h.tasks, task)
			h.l.Unwatch(task)
		}
		h.stopIdle()
	}()
	return c, nil
}

// stopIdle stops the listener when nobody waits; h.mu is held.
func (h *CommitHub) stopIdle() {
	if len(h.subs) == 0 {
		h.cancel()
	}
}

// Wake wakes the waiters of task, or every waiter when task is "".
func (h *CommitHub) Wake(task string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, t := range h.subs {
		if task != "" && t != task {
			continue
		}
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Waiting is the number of waiters.
func (h *CommitHub) Waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// CommitListenFunc is a CommitListener of every task that Start is.
type CommitListenFunc func(ctx context.Context) (run func(), err error)

func (f CommitListenFunc) Start(ctx context.Context) (func(), error) { return f(ctx) }
func (CommitListenFunc) Watch(string) error                          { return nil }
func (CommitListenFunc) Unwatch(string)                              {}
