package postgres

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// notifier sends the events channel's notifications of the store's env
// puts after their commit, in transactions of their own that write
// nothing: a NOTIFY inside the put would hold the database's notify lock
// through the put's commit and its flush, and puts would commit one at a
// time (migration 0009). Tasks named while a send is under way go
// together in the next one, so a burst of puts makes few sends. A lost
// send costs a follower its poll interval, no event.
type notifier struct {
	pool    *pgxpool.Pool
	channel string

	mu      sync.Mutex
	pending []string
	running bool
	closed  bool
	idle    sync.WaitGroup
}

// notify queues a notification for task and starts a send when none is
// under way.
func (n *notifier) notify(task string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if !slices.Contains(n.pending, task) {
		n.pending = append(n.pending, task)
	}
	if !n.running {
		n.running = true
		n.idle.Add(1)
		go n.send()
	}
}

// send sends what is pending until nothing is.
func (n *notifier) send() {
	defer n.idle.Done()
	for {
		n.mu.Lock()
		tasks := n.pending
		n.pending = nil
		if len(tasks) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = n.pool.Exec(ctx, "SELECT pg_notify($1, t) FROM unnest($2::text[]) AS t", n.channel, tasks)
		cancel()
	}
}

// close waits for the sends under way, and refuses more.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.idle.Wait()
}
