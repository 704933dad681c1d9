package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.CommitSource = (*Store)(nil)

// hubPoll is how often the commit hub wakes its waiters without a write
// heard: rarely, as they poll on their own as well (workspace.Wait).
const hubPoll = time.Hour

// commitHub is one watch of the database (the wake-ups' loop) shared by
// every Commits of a Store: one inotify instance and one connection
// however many waiters a process has (an MCP server serving many agents
// has many).
type commitHub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]struct{}
	cancel context.CancelFunc
}

// Commits hears the commits of every process on the database
// (workspace.CommitSource), to any task: its channel receives once at the
// start and after each commit, as soon as it is visible (the loop of wakeups.go
// reads PRAGMA data_version after every write heard until it moves).
func (s *Store) Commits(ctx context.Context, _ string) (<-chan struct{}, error) {
	h := &s.hub
	c := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[chan struct{}]struct{}{}
	}
	if len(h.subs) == 0 {
		fw, err := s.watchFiles()
		if err != nil {
			return nil, err
		}
		hctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel // a watch ending meanwhile ends on its own
		go func() {
			defer fw.Close()
			s.loop(hctx, fw, hubPoll, func(error) { h.broadcast() })
		}()
	}
	h.subs[c] = struct{}{}
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

func (h *commitHub) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}
