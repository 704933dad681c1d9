package dbstore

import (
	"context"
	"sync"
)

// CommitHub hands what one listener of a store hears (a watch of the
// database's files, a LISTEN) to every waiter of workspace.CommitSource
// in the process: one listener however many waiters there are (an MCP
// server serving many agents has many). The first waiter starts it, and
// it is stopped once the last has gone.
type CommitHub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]string // a waiter's channel → its task
	cancel context.CancelFunc
}

// Subscribe adds a waiter of task until ctx ends. Its channel receives
// once now and at each Wake of its task or of every task (coalesced: one
// value waits at most). When no listener runs, start makes one: it
// returns what runs it until its context ends (in a goroutine of the
// hub's), or the error that leaves the waiter to its poll.
func (h *CommitHub) Subscribe(ctx context.Context, task string, start func(ctx context.Context) (run func(), err error)) (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		lctx, cancel := context.WithCancel(context.Background())
		run, err := start(lctx)
		if err != nil {
			cancel()
			return nil, err
		}
		h.cancel = cancel // a listener ending meanwhile ends on its own
		go run()
	}
	if h.subs == nil {
		h.subs = map[chan struct{}]string{}
	}
	c := make(chan struct{}, 1)
	h.subs[c] = task
	c <- struct{}{}
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, c)
		if len(h.subs) == 0 {
			h.cancel()
		}
	}()
	return c, nil
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
