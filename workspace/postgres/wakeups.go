package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The daemon's wake-ups on PostgreSQL: it LISTENs on the markers channel,
// which every marker inserted and every task created notifies with its
// task's id, and it polls the markers table every DefaultPoll for markers
// whose notification was lost (or where a transaction pooler drops
// LISTEN). After each (re)connection it looks at once for tasks with
// markers or with no state yet, since notifications may have been lost
// meanwhile. Every task is seen on one
// channel, so Follow and Unfollow have nothing to do.

// DefaultPoll is how often the markers table is looked at without a
// notification.
const DefaultPoll = time.Second

// Wakeups starts the wake-up source (workspace.Served). opt.Interval is
// the poll (zero: DefaultPoll).
func (s *Store) Wakeups(ctx context.Context, opt workspace.WakeOptions) (workspace.Wakeups, error) {
	poll, err := sqlstore.WakePoll(opt, "listen", "PostgreSQL", "a database root wakes on its notifications and a poll: leave --wakeups out", DefaultPoll)
	if err != nil {
		return nil, err
	}
	return sqlstore.StartWakeups(ctx, "listen", func(ctx context.Context, c chan<- workspace.Wake) {
		s.wake(ctx, poll, c)
	}), nil
}

// wake sends the tasks that notifications and polls name until ctx ends.
func (s *Store) wake(ctx context.Context, poll time.Duration, c chan<- workspace.Wake) {
	ids, errs := make(chan string, 1024), make(chan error, 1)
	go s.listen(ctx, ids, errs)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		var w workspace.Wake
		select {
		case <-ctx.Done():
			return
		case id := <-ids:
			if id != "" {
				w.Task = id
				break
			}
			// (Re)connected: a task created before LISTEN took hold
			// notified no one, and has no marker for the poll to find.
			sqlstore.PollWaiting(ctx, c, s.unheardTasks)
			continue
		case <-t.C:
			sqlstore.PollWaiting(ctx, c, s.waitingTasks)
			continue
		case err := <-errs:
			w.Err = err
		}
		select {
		case c <- w:
		case <-ctx.Done():
			return
		}
	}
}

// listen forwards the task ids of notifications to ids, reconnecting
// after an error, which it sends to errs; after each (re)connection it
// sends "" (poll), since notifications may have been lost meanwhile.
func (s *Store) listen(ctx context.Context, ids chan<- string, errs chan<- error) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, ids)
		if ctx.Err() != nil {
			return
		}
		// The poll covers the gap; the next connection is tried after
		// backoff.
		select {
		case errs <- fmt.Errorf("listen for markers (again in %s): %w", backoff, err):
		case <-ctx.Done():
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, ids chan<- string) error {
	conn, err := s.connectOne(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		return err
	}
	select {
	case ids <- "":
	case <-ctx.Done():
		return nil
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		select {
		case ids <- n.Payload:
		case <-ctx.Done():
			return nil
		}
	}
}

// waitingTasks are the tasks with markers waiting.
func (s *Store) waitingTasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT task_id FROM markers")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// unheardTasks are the tasks with markers waiting and those with no state
// yet: what a notification sent while no one listened would have named.
func (s *Store) unheardTasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT task_id FROM markers
		UNION SELECT t.id FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM states s WHERE s.task_id = t.id)`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Tasks lists the tasks the daemon serves (workspace.Served): those with
// markers waiting or no state yet, and those with subtasks in progress
// (whose timeouts it watches). A task with none of these has nothing for
// the daemon to do until a marker wakes it.
func (s *Store) Tasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.id FROM tasks t LEFT JOIN states s ON s.task_id = t.id
		WHERE s.task_id IS NULL
		   OR position('"`+machine.SubtaskInProgress+`"' in s.doc) > 0
		   OR EXISTS (SELECT 1 FROM markers m WHERE m.task_id = t.id)
		ORDER BY t.id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list the tasks to serve: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
