package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Events are rows of events, one events.log line each, in append order by
// id. SQLite has one writer at a time, so ids are drawn in commit order: a
// reader that has read an id never finds a lower one later, and reading on
// from the last id read misses nothing.

// AppendEvents inserts events of one task (sqlstore.Driver) in one write
// transaction, in the order given.
func (d sqlDriver) AppendEvents(ctx context.Context, taskID string, out []workspace.Event) error {
	return d.s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		return insertEvents(ctx, tx, taskID, out...)
	})
}

// MergeEvents calls each for every event of the given tasks (every task
// when taskIDs is nil), oldest first: merged by time, events of one
// instant in the order of taskIDs (sorted when every task is read), then
// in append order, as on files. Lines that do not parse are skipped and
// counted, one BadLines per task that has any. The rows stream from one
// snapshot.
func (s *Store) MergeEvents(ctx context.Context, taskIDs []string, each func(workspace.Event) error) ([]workspace.BadLines, error) {
	var bad sqlstore.BadTally
	err := s.read(ctx, func(tx wtx) error {
		ids := taskIDs
		if ids == nil {
			var err error
			if ids, err = strings1(tx.QueryContext(ctx, "SELECT id FROM tasks ORDER BY id")); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
		}
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT e.task_id, e.line FROM events e
			JOIN json_each($1) AS o ON o.value = e.task_id
			ORDER BY e.time, o.key, e.id`, string(list))
		if err != nil {
			return err
		}
		defer rows.Close()
		var task, line string
		for rows.Next() {
			if err := rows.Scan(&task, &line); err != nil {
				return err
			}
			e, perr := workspace.ParseEvent(line)
			if perr != nil {
				bad.Add(task, perr)
				continue
			}
			if err := each(e); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return bad.Lines(), err
}

// FollowEvents calls each for every new event of a task (every task when
// taskID is ""), after the existing ones when fromStart, in append order,
// until ctx ends; it then returns nil. It looks every interval (a second
// when zero), so a new event waits at most about interval.
func (s *Store) FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(workspace.Event)) error {
	interval, err := sqlstore.FollowInterval(taskID, interval)
	if err != nil {
		return err
	}
	var low int64
	if !fromStart {
		if err := s.rdb.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM events").Scan(&low); err != nil {
			return stopped(ctx, fmt.Errorf("follow events: %w", err))
		}
	}
	for {
		var err error
		if low, err = s.followOnce(ctx, taskID, low, each); err != nil {
			return stopped(ctx, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// followOnce delivers the events after low and returns the last id read.
func (s *Store) followOnce(ctx context.Context, taskID string, low int64, each func(workspace.Event)) (int64, error) {
	type idLine struct {
		id   int64
		line string
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, line FROM events WHERE id > $1 AND ($2 = '' OR task_id = $2) ORDER BY id`, low, taskID)
	got, err := collect(rows, err, func(r sqlstore.Rows) (idLine, error) {
		var v idLine
		return v, r.Scan(&v.id, &v.line)
	})
	if err != nil {
		return low, fmt.Errorf("follow events: %w", err)
	}
	for _, v := range got {
		low = v.id
		if e, perr := workspace.ParseEvent(v.line); perr == nil {
			each(e)
		}
	}
	return low, nil
}

// stopped is nil once ctx is done (following ends by cancelling), else
// err.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
