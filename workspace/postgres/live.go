package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// ReadEventsFrom calls each for every event of task taskID whose row id
// is above pos, in id order, and returns the highest id read (pos when
// there is none). The position of an event is its row id: Start is the
// id before it, End its own. Ids are drawn in commit order (the events
// lock), so reading on from the position a read gave back never skips an
// event committed later, nor delivers one twice.
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
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1)", taskID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return sqlstore.NotFoundTask(taskID)
		}
		rows, err := tx.Query(ctx, "SELECT id, line FROM events WHERE task_id = $1 AND id > $2 ORDER BY id", taskID, pos)
		if err != nil {
			return err
		}
		var (
			id   int64
			line string
		)
		prev := pos
		_, err = pgx.ForEachRow(rows, []any{&id, &line}, func() error {
			if e, perr := workspace.ParseEvent(line); perr == nil {
				out = append(out, workspace.PositionedEvent{Event: e, Start: prev, End: id})
			}
			prev, next = id, id
			return nil
		})
		return err
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
	rows, err := s.pool.Query(ctx, `SELECT owner FROM entries WHERE scope = $1 GROUP BY owner ORDER BY owner COLLATE "C"`, string(workspace.ScopeAgent))
	if err != nil {
		return nil, readErr("list the agents that keep memory", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, readErr("list the agents that keep memory", err)
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}
