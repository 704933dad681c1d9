package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Events are rows of events, one events.log line each, each with the id
// of the transaction that wrote it (xid, migration 0009). Writers do not
// wait for each other; a reader reads in (xid, id) order and only the
// rows of transactions older than every one still running, so going on
// from the last (xid, id) read never skips an event whose transaction
// commits late, nor reads one twice. Every insert notifies
// workspaced_events_<schema> with the task's id
// when its transaction commits (a trigger, so the daemon's commit and an
// agent's plain INSERT wake followers alike); a follower LISTENs there and
// also polls every interval, which covers a lost notification and a
// connection pooler where LISTEN is unavailable.

// eventsChannel is the name followers LISTEN on.
func (s *Store) eventsChannel() string { return "workspaced_events_" + s.schema }

// AppendEvents inserts events of one task (sqlstore.Driver) in one
// statement, in the order given.
func (d driver) AppendEvents(ctx context.Context, taskID string, out []workspace.Event) error {
	times, lines := make([]time.Time, len(out)), make([]string, len(out))
	for i, e := range out {
		times[i], lines[i] = e.Time, workspace.FormatEvent(e)
	}
	// WITH ORDINALITY keeps the order given: ids are drawn in it.
	tag, err := d.s.pool.Exec(ctx, `INSERT INTO events (task_id, time, line)
		SELECT $1, t, l FROM unnest($2::timestamptz[], $3::text[]) WITH ORDINALITY AS u(t, l, n)
		WHERE EXISTS (SELECT 1 FROM tasks WHERE id = $1) ORDER BY n`, taskID, times, lines)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return sqlstore.NotFoundTask(taskID)
	}
	return nil
}

// MergeEvents calls each for every event of the given tasks (every task
// when taskIDs is nil), oldest first: merged by time, events of one
// instant in the order of taskIDs (sorted when every task is read), then
// in append order, as on files. Lines that do not parse are skipped and
// counted, one BadLines per task that has any. The server sorts, and the
// rows stream: memory stays flat in the number of events.
func (s *Store) MergeEvents(ctx context.Context, taskIDs []string, each func(workspace.Event) error) ([]workspace.BadLines, error) {
	var bad sqlstore.BadTally
	// One snapshot: the task list and the events agree.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		ids := taskIDs
		if ids == nil {
			rows, err := tx.Query(ctx, "SELECT id FROM tasks ORDER BY id COLLATE \"C\"")
			if err != nil {
				return err
			}
			if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT e.task_id, e.line FROM events e
			JOIN unnest($1::text[]) WITH ORDINALITY AS o(task_id, n) ON o.task_id = e.task_id
			ORDER BY e.time, o.n, e.id`, ids)
		if err != nil {
			return err
		}
		var task, line string
		_, err = pgx.ForEachRow(rows, []any{&task, &line}, func() error {
			e, perr := workspace.ParseEvent(line)
			if perr != nil {
				bad.Add(task, perr)
				return nil
			}
			return each(e)
		})
		return err
	})
	return bad.Lines(), err
}

// FollowEvents calls each for every new event of a task (every task when
// taskID is ""), after the existing ones when fromStart, in append order,
// until ctx ends; it then returns nil. It waits on the events channel for
// at most interval between two reads, so a new event waits at most about
// interval even when no notification arrives (or LISTEN is refused, as
// through a transaction pooler, when it only polls).
func (s *Store) FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(workspace.Event)) error {
	interval, err := sqlstore.FollowInterval(taskID, interval)
	if err != nil {
		return err
	}
	f := &follower{s: s, task: taskID, xid: "0"}
	if !fromStart {
		// After the last event readable now: one whose transaction is
		// still older than a running one is read when that one ends,
		// though it may have committed before the follow began.
		err := s.pool.QueryRow(ctx, `SELECT coalesce(max(xid), '0')::text FROM events WHERE xid < pg_snapshot_xmin(pg_current_snapshot())`).Scan(&f.xid)
		if err == nil {
			err = s.pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM events WHERE xid = $1::xid8", f.xid).Scan(&f.low)
		}
		if err != nil {
			return stopped(ctx, fmt.Errorf("follow events: %w", err))
		}
	}
	conn, err := s.listenEvents(ctx)
	if err != nil {
		return stopped(ctx, err)
	}
	defer func() {
		if conn != nil {
			s.unlisten(conn)
		}
	}()
	var recheck time.Duration // while events are held back: the next look, growing
	for {
		held, err := f.read(ctx, each)
		if err != nil {
			return stopped(ctx, err)
		}
		wait := interval
		if held {
			// Events wait for an older transaction, which may end
			// without a notification (it wrote no event): look again
			// soon, then less and less often.
			recheck = min(max(2*recheck, heldFirstLook), interval)
			wait = recheck
		} else {
			recheck = 0
		}
		if conn == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err = conn.Conn().WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			// The listening connection broke (a restart): poll on a new
			// one when it can be had, else on the pool.
			conn.Release()
			conn, _ = s.listenEvents(ctx)
		}
	}
}

// stopped is nil once ctx is done (following ends by cancelling), else
// err.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// listenEvents takes a connection of the pool and LISTENs on the events channel
// with it; nil (and no error) when the server refuses LISTEN, and the
// follower then only polls.
func (s *Store) listenEvents(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow events: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.eventsChannel()}.Sanitize()); err != nil {
		conn.Release()
		return nil, nil
	}
	return conn, nil
}

// unlisten gives a listening connection back to the pool without its
// LISTEN, or closes it when that fails.
func (s *Store) unlisten(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "UNLISTEN *"); err != nil {
		_ = conn.Conn().Close(ctx)
	}
	conn.Release()
}

// follower reads new events in (xid, id) order, only those of
// transactions older than every one still running (migration 0009):
// every row that will ever come before them has committed, so reading on
// from the last (xid, id) read misses nothing and delivers each event
// once, in the same order to every follower.
type follower struct {
	s    *Store
	task string
	xid  string // the transaction id of the last event read, as text
	low  int64  // the last id read
}

// heldFirstLook is how soon a follower looks again when events it sees
// wait for an older transaction to end.
const heldFirstLook = 10 * time.Millisecond

// read delivers the events readable since the last read, and says some
// are held: committed, but waiting for an older transaction to end. The
// readable ones come first in (xid, id) order.
func (f *follower) read(ctx context.Context, each func(workspace.Event)) (held bool, err error) {
	// Ordered by the columns (e.xid), not by the text of the first
	// output column, which would take its name.
	rows, err := f.s.pool.Query(ctx, `SELECT e.xid::text AS xid_text, e.id, e.line, e.xid < pg_snapshot_xmin(pg_current_snapshot()) FROM events e
		WHERE (e.xid, e.id) > ($1::xid8, $2) AND ($3 = '' OR e.task_id = $3)
		ORDER BY e.xid, e.id`, f.xid, f.low, f.task)
	if err != nil {
		return false, fmt.Errorf("follow events: %w", err)
	}
	var (
		xid, line string
		id        int64
		readable  bool
		out       []workspace.Event
	)
	low, lowXid := f.low, f.xid
	_, err = pgx.ForEachRow(rows, []any{&xid, &id, &line, &readable}, func() error {
		if !readable || held {
			held = true
			return nil
		}
		low, lowXid = id, xid

		if e, perr := workspace.ParseEvent(line); perr == nil {
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("follow events: %w", err)
	}
	f.low, f.xid = low, lowXid
	for _, e := range out {
		each(e)
	}
	return held, nil
}
