package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.CommitSource = (*Store)(nil)

// commitHub is one LISTEN on the events channel shared by every Commits
// of a Store: one connection of the pool however many waiters a process
// has (an MCP server serving many agents has many). The daemon's commits
// append the events of the markers they take, and each insert notifies
// the channel with its task's id when its transaction commits.
type commitHub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]string // a waiter's channel → its task
	cancel context.CancelFunc
}

// Commits hears the commits that append events to task
// (workspace.CommitSource): its channel receives once at the start and
// after each such commit is notified. Where the server refuses LISTEN (a
// transaction pooler) it is an error, and Wait polls.
func (s *Store) Commits(ctx context.Context, task string) (<-chan struct{}, error) {
	h := &s.hub
	c := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		conn, err := s.listenEvents(ctx)
		if err != nil {
			return nil, err
		}
		if conn == nil {
			return nil, errors.New("listen for commits: the server refuses LISTEN")
		}
		hctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel // a listen ending meanwhile ends on its own
		go s.hear(hctx, conn)
	}
	if h.subs == nil {
		h.subs = map[chan struct{}]string{}
	}
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

// hear passes each notification on to the waiters of its task until ctx
// ends; a broken connection is replaced (every waiter is woken, as a
// notification may have been lost with it).
func (s *Store) hear(ctx context.Context, conn *pgxpool.Conn) {
	defer func() {
		if conn != nil {
			s.unlisten(conn)
		}
	}()
	for ctx.Err() == nil {
		if conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if conn, _ = s.listenEvents(ctx); conn != nil {
				s.hub.wake("")
			}
			continue
		}
		n, err := conn.Conn().WaitForNotification(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			conn.Release()
			conn = nil
		default:
			s.hub.wake(n.Payload)
		}
	}
}

// wake wakes the waiters of task, or every waiter when task is "".
func (h *commitHub) wake(task string) {
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
