package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.CommitSource = (*Store)(nil)

// Commits hears the commits that append events to task
// (workspace.CommitSource): its channel receives once at the start and
// after each such commit is notified — the daemon's commits append the
// events of the markers they take, and each insert notifies the events
// channel with its task's id when its transaction commits. One LISTEN
// serves every waiter of the store (s.hub): one connection of the pool.
// Where the server refuses LISTEN (a transaction pooler) it is an error,
// and Wait polls.
func (s *Store) Commits(ctx context.Context, task string) (<-chan struct{}, error) {
	return s.hub.Subscribe(ctx, task, workspace.CommitListenFunc(func(lctx context.Context) (func(), error) {
		conn, err := s.listenEvents(ctx)
		if err != nil {
			return nil, err
		}
		if conn == nil {
			return nil, errors.New("listen for commits: the server refuses LISTEN")
		}
		return func() { s.hear(lctx, conn) }, nil
	}))
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
				s.hub.Wake("")
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
			s.hub.Wake(n.Payload)
		}
	}
}
