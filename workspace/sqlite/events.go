package sqlite

import (
	"context"
	"database/sql"
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

// AppendEvent appends one event to its task's feed; a zero time is now.
func (s *Store) AppendEvent(ctx context.Context, e workspace.Event) error {
	return s.AppendEvents(ctx, e.TaskID, []workspace.Event{e})
}

// AppendEvents appends events of one task in one transaction, in the
// order given. The task must exist (ErrNotFound); a bad id is ErrInvalid.
func (s *Store) AppendEvents(ctx context.Context, taskID string, evs []workspace.Event) error {
	out, err := sqlstore.StampEvents(taskID, evs, now)
	if err != nil || len(out) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	err = s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		return insertEvents(ctx, tx, taskID, out...)
	})
	if err != nil {
		return readErr("append events to task "+taskID, err)
	}
	return nil
}

// ReadEvents returns a task's events in append order; lines that do not
// parse are returned as errors in bad.
func (s *Store) ReadEvents(ctx context.Context, taskID string) (evs []workspace.Event, bad []error, err error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	err = s.read(ctx, func(tx wtx) error {
		evs, bad = nil, nil
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		lines, err := strings1(tx.QueryContext(ctx, "SELECT line FROM events WHERE task_id = $1 ORDER BY id", taskID))
		for _, line := range lines {
			e, perr := workspace.ParseEvent(line)
			if perr != nil {
				bad = append(bad, perr)
				continue
			}
			evs = append(evs, e)
		}
		return err
	})
	if err != nil {
		return nil, nil, readErr("read events of task "+taskID, err)
	}
	return evs, bad, nil
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
	got, err := collect(rows, err, func(r *sql.Rows) (idLine, error) {
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

// ReadEventsFrom calls each for every event of task taskID whose row id
// is above pos, in id order, and returns the highest id read (pos when
// there is none). The position of an event is its row id: Start is the
// id before it, End its own.
func (s *Store) ReadEventsFrom(ctx context.Context, taskID string, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return pos, err
	}
	if pos < 0 {
		return pos, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read events of task " + taskID,
			Msg: "a negative position", Hint: "read from 0, or from a position a read gave back"}
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var out []workspace.PositionedEvent
	next := pos
	err := s.read(ctx, func(tx wtx) error {
		out, next = nil, pos
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, line FROM events WHERE task_id = $1 AND id > $2 ORDER BY id", taskID, pos)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			id   int64
			line string
		)
		prev := pos
		for rows.Next() {
			if err := rows.Scan(&id, &line); err != nil {
				return err
			}
			if e, perr := workspace.ParseEvent(line); perr == nil {
				out = append(out, workspace.PositionedEvent{Event: e, Start: prev, End: id})
			}
			prev, next = id, id
		}
		return rows.Err()
	})
	if err != nil {
		return pos, readErr("read events of task "+taskID, err)
	}
	for _, e := range out {
		each(e)
	}
	return next, nil
}

// MemoryAgents lists the agents that keep memory entries, sorted.
func (s *Store) MemoryAgents(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	names, err := strings1(s.rdb.QueryContext(ctx, `SELECT owner FROM entries WHERE scope = $1 GROUP BY owner ORDER BY owner`, string(workspace.ScopeAgent)))
	if err != nil {
		return nil, readErr("list the agents that keep memory", err)
	}
	return names, nil
}
