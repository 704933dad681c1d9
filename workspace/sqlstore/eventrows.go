package sqlstore

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

// Events are rows of events, one events.log line each, read in the
// dialect's EventOrder: by id on SQLite, whose one writer at a time draws
// ids in commit order; by (transaction id, id) on PostgreSQL, where
// writers do not wait for each other and a reader reads only the rows of
// transactions older than every one still running (Dialect.EventsAfter,
// migration 0009). Either way a reader that goes on from the last event
// it read never finds one before it later, so it misses nothing and reads
// nothing twice. Merging and following are the drivers' own.

// AppendEvent appends one event to its task's feed; a zero time is now.
func (s *Store) AppendEvent(ctx context.Context, e workspace.Event) error {
	return s.AppendEvents(ctx, e.TaskID, []workspace.Event{e})
}

// AppendEvents appends events of one task in one write, in the order
// given. The task must exist (ErrNotFound); a bad id is ErrInvalid.
func (s *Store) AppendEvents(ctx context.Context, taskID string, evs []workspace.Event) error {
	out, err := StampEvents(taskID, evs, Now)
	if err != nil || len(out) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := s.d.AppendEvents(ctx, taskID, out); err != nil {
		return ReadErr("append events to task "+taskID, err)
	}
	return nil
}

// ReadEvents returns a task's events in append order; lines that do not
// parse are returned as errors in bad.
func (s *Store) ReadEvents(ctx context.Context, taskID string) (evs []workspace.Event, bad []error, err error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	err = s.d.Read(ctx, func(tx Executor) error {
		evs, bad = nil, nil
		if err := RequireTask(ctx, tx, taskID); err != nil {
			return err
		}
		lines, err := Strings(tx.Query(ctx, "SELECT line FROM events WHERE task_id = $1 ORDER BY "+s.dl.EventOrder, taskID))
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
		return nil, nil, ReadErr("read events of task "+taskID, err)
	}
	return evs, bad, nil
}

// ReadEventsFrom calls each for every event of task taskID whose row id
// is above pos, in id order, and returns the highest id read (pos when
// there is none). The position of an event is its row id: Start is the
// id of the one read before it, End its own. Reading on from the
// position a read gave back never skips an event committed later, nor
// delivers one twice (Dialect.EventsAfter).
func (s *Store) ReadEventsFrom(ctx context.Context, taskID string, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return pos, err
	}
	if pos < 0 {
		return pos, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read events of task " + taskID,
			Msg: "a negative position", Hint: "read from 0, or from a position a read gave back"}
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var out []workspace.PositionedEvent
	next := pos
	err := s.d.Read(ctx, func(tx Executor) error {
		out, next = nil, pos
		if err := RequireTask(ctx, tx, taskID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT id, line FROM events WHERE task_id = $1 AND "+s.dl.EventsAfter("events", "$2")+" ORDER BY "+s.dl.EventOrder, taskID, pos)
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
		return pos, ReadErr("read events of task "+taskID, err)
	}
	for _, e := range out {
		each(e)
	}
	return next, nil
}

// MemoryAgents lists the agents that keep memory entries, sorted.
func (s *Store) MemoryAgents(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	names, err := Strings(s.r.Query(ctx, `SELECT owner FROM entries WHERE scope = $1 GROUP BY owner ORDER BY owner`+s.dl.Collate, string(workspace.ScopeAgent)))
	if err != nil {
		return nil, ReadErr("list the agents that keep memory", err)
	}
	return names, nil
}
