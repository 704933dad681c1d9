package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.Watcher = (*Store)(nil)

const (
	// watchPoll is how often a watch looks at memory and the friction
	// log, and how often it reports Everything where LISTEN is refused.
	watchPoll = 2 * time.Second
	// watchDrain is how long a watch waits for more notifications
	// after one, to report them together.
	watchDrain = 10 * time.Millisecond
	// watchBackoffMax caps the wait between two reconnections.
	watchBackoffMax = 5 * time.Second
)

// Watch reports what changes in the workspace (workspace.Watcher). It
// LISTENs on the events channel on a connection of its own: every
// statement that inserts events notifies it with the task's id when it
// commits (the daemon's commits, a created task and an agent's events
// alike), and the notifications queued at once are reported together as
// one Change naming their tasks. Memory and the friction log write no
// events: the watch looks at them every two seconds (a count and the
// newest update of memory entries, the last memory event, the friction
// log's row) and reports
// Memory or Friction when they moved.
//
// A broken connection is reconnected with a growing backoff (up to 5s),
// then Everything is reported with the error, since notifications sent
// meanwhile are lost. Where the server refuses LISTEN (a transaction
// pooler), the watch falls back to reporting Everything every two
// seconds. It returns nil when ctx ends.
func (s *Store) Watch(ctx context.Context, each func(workspace.Change)) error {
	backoff := 100 * time.Millisecond
	var trouble error
	for {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.eventsChannel()}.Sanitize())
			if err != nil {
				conn.Release()
			}
		}
		if ctx.Err() != nil {
			if err == nil {
				s.unlisten(conn)
			}
			return nil
		}
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr):
			// The server answered, and refused: only polling is left.
			return s.pollEverything(ctx, each, fmt.Errorf("watch the workspace: LISTEN refused, polling every %s: %w", s.pollEvery(), err))
		case err != nil:
			trouble = fmt.Errorf("watch the workspace: %w", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, watchBackoffMax)
			continue
		}
		backoff = 100 * time.Millisecond
		err = s.watchOn(ctx, conn, trouble, each)
		if ctx.Err() != nil {
			s.unlisten(conn)
			return nil
		}
		conn.Release()
		trouble = fmt.Errorf("watch the workspace: the listening connection broke: %w", err)
	}
}

// watchOn reports Everything (with trouble, when the watch has just got
// over some), then what the notifications on conn name, until ctx ends
// (nil) or the connection breaks (its error). The caller releases conn.
func (s *Store) watchOn(ctx context.Context, conn *pgxpool.Conn, trouble error, each func(workspace.Change)) error {
	// The fingerprint is read before Everything: whatever moves after
	// it is reported.
	memory, friction, _ := s.sideMarks(ctx)
	each(workspace.Change{Everything: true, Err: trouble})
	looked := time.Now()
	// The tasks with events held back: committed, but waiting for an
	// older transaction to end (migration 0009), which may end without
	// a notification; each is reported again once its events can be read.
	var held []string
	var recheck time.Duration
	poll := s.pollEvery()
	for {
		wait := max(time.Until(looked.Add(poll)), 0)
		if len(held) > 0 {
			recheck = min(max(2*recheck, heldFirstLook), poll)
			wait = min(wait, recheck)
		} else {
			recheck = 0
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var c workspace.Change
		if err == nil {
			c.Tasks = append(c.Tasks, n.Payload)
			// Drain what is queued already: one report for a burst.
			for {
				dctx, cancel := context.WithTimeout(ctx, watchDrain)
				n, err = conn.Conn().WaitForNotification(dctx)
				cancel()
				if err != nil {
					break
				}
				if !slices.Contains(c.Tasks, n.Payload) {
					c.Tasks = append(c.Tasks, n.Payload)
				}
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !isTimeout(err) {
			return err
		}
		if len(c.Tasks) > 0 || len(held) > 0 {
			now, err := s.heldTasks(ctx)
			if err != nil {
				now = nil // the next poll reports what moved
			}
			for _, id := range held {
				if !slices.Contains(now, id) && !slices.Contains(c.Tasks, id) {
					c.Tasks = append(c.Tasks, id)
				}
			}
			held = now
		}
		if time.Since(looked) >= poll {
			looked = time.Now()
			if m, f, err := s.sideMarks(ctx); err == nil {
				c.Memory, c.Friction = m != memory, f != friction
				memory, friction = m, f
			}
		}
		if len(c.Tasks) > 0 || c.Memory || c.Friction {
			slices.Sort(c.Tasks)
			each(c)
		}
	}
}

// pollEvery is how often s's watches poll: watchPoll unless a test shortened it.
func (s *Store) pollEvery() time.Duration {
	if s.watchEvery > 0 {
		return s.watchEvery
	}
	return watchPoll
}

// heldTasks lists the tasks with events committed but held back for an
// older transaction still running.
func (s *Store) heldTasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT task_id FROM events WHERE xid >= pg_snapshot_xmin(pg_current_snapshot())")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// isTimeout says err is a wait that ran out, not a broken connection.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// sideMarks reads what tells that memory or the friction log changed:
// the number, newest update and summed versions of memory entries and
// the last memory event readers can read (which moves with every one
// they can read next, migration 0009), and when the friction log's row
// was written and its length.
func (s *Store) sideMarks(ctx context.Context) (memory, friction string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*)::text || '/' || coalesce(max(updated_at)::text, '') || '/' || coalesce(sum(version), 0)::text
			FROM entries WHERE scope = ANY($1::text[]))
			|| '/' || coalesce((SELECT xid::text || '.' || id FROM memory_events
				WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY xid DESC, id DESC LIMIT 1), ''),
		coalesce((SELECT updated_at::text || '/' || length(body)::text FROM files WHERE path = $2), '')`,
		[]string{string(workspace.ScopeAgent), string(workspace.ScopeGlobal)}, frictionPath).Scan(&memory, &friction)
	return memory, friction, err
}

// pollEverything reports Everything now (with why) and then every
// watchPoll until ctx ends.
func (s *Store) pollEverything(ctx context.Context, each func(workspace.Change), why error) error {
	each(workspace.Change{Everything: true, Err: why})
	t := time.NewTicker(s.pollEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			each(workspace.Change{Everything: true})
		}
	}
}
