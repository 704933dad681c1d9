package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Committing on SQLite: sqlstore's commit in one BEGIN IMMEDIATE
// transaction on the daemon's connection, synced before COMMIT returns.
// It holds SQLite's write lock from its first read, so what it reads (the
// products a done names, the plan) cannot change before it commits.

// Committer is the daemon's handle on task id (workspace.Served). A
// commit that wrote rings the bell (bell.go) and wakes the commit hub's
// waiters in this process, once it is durable and visible.
func (s *Store) Committer(id string) workspace.Committer {
	return s.NewCommitter(id, func(ctx context.Context, fn func(sqlstore.CommitTx) error) error {
		// The commit ends for the wake-up loop (own.go) once the bell is
		// rung: the loop's watch, put back at that end, does not hear it.
		s.own.begin()
		defer s.own.end()
		wrote := false
		err := fault(s.writeSynced(ctx, func(tx wtx) error { return fn(commitTx{tx, &wrote}) }))
		if err == nil && wrote {
			s.bell.ring(s.path)
			s.hub.Wake("")
		}
		return err
	})
}

// commitTx is a commit's transaction (sqlstore.CommitTx); wrote is set
// once it writes.
type commitTx struct {
	wtx
	wrote *bool
}

// ReadCommit reads the task (sql.ErrNoRows when gone), its state row (the
// document only when the row's stamp is not mine), the journal records
// after it and up to max markers waiting, each with whether its name is
// journaled already. The epoch is 0: the flock leads.
func (c commitTx) ReadCommit(ctx context.Context, taskID string, max int, mine sqlstore.Stamp) (sqlstore.CommitRead, error) {
	var (
		r   sqlstore.CommitRead
		doc sql.NullString
	)
	// The task and its state row in one statement: no row, the task is
	// gone; a task with no state has NULLs for the row's columns.
	// The row is read from state_history, not the states view, so that
	// its document is assembled from its parts only when it is read.
	err := c.QueryRowContext(ctx, `SELECT s.task_id IS NOT NULL,
			CASE WHEN s.version = $2 AND s.version > 0 AND s.epoch = $3 THEN NULL ELSE `+assembledDoc+` END,
			coalesce(s.journal_seq, 0), coalesce(s.version, 0)
		FROM tasks t LEFT JOIN state_history s ON s.n = (SELECT max(n) FROM state_history WHERE task_id = t.id AND backup = 0)
		WHERE t.id = $1`,
		taskID, mine.Version, mine.Epoch).Scan(&r.HasState, &doc, &r.PrevSeq, &r.PrevVersion)
	if err != nil {
		return r, err
	}
	r.Prev, r.Mine = doc.String, r.HasState && !doc.Valid
	if r.After, err = strings1(c.QueryContext(ctx, "SELECT record FROM journal WHERE task_id = $1 AND seq > $2 ORDER BY seq", taskID, r.PrevSeq)); err != nil {
		return r, err
	}
	rows, err := c.QueryContext(ctx, `SELECT id, kind, name, body, dropped_at,
		EXISTS (SELECT 1 FROM journal j WHERE j.task_id = m.task_id AND j.name = m.name)
		FROM markers m WHERE task_id = $1 ORDER BY id LIMIT $2`, taskID, max)
	r.Markers, err = collect(rows, err, func(row sqlstore.Rows) (sqlstore.Marker, error) {
		var (
			m       sqlstore.Marker
			dropped string
		)
		err := row.Scan(&m.ID, &m.Kind, &m.Name, &m.Body, &dropped, &m.Taken)
		m.DroppedAt = parseTS(dropped)
		return m, err
	})
	return r, err
}

// ReadProducts reads the products at paths and planPaths, one by one.
func (c commitTx) ReadProducts(ctx context.Context, taskID string, paths, planPaths []string) (map[string][]byte, map[string]string, error) {
	products, plans := map[string][]byte{}, map[string]string{}
	for _, p := range paths {
		body, ok, err := sqlstore.ReadBody(ctx, c.wtx, taskID, p)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			products[p] = []byte(body)
		}
	}
	for _, p := range planPaths {
		body, ok, err := sqlstore.ReadBody(ctx, c.wtx, taskID, p)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			plans[p] = body
		}
	}
	return products, plans, nil
}

// WriteCommit writes the journal rows, the new state (the previous one
// kept as a backup where it lies, pruned to w.Keep: backups.go), its
// events, and deletes the markers taken and those passed over.
func (c commitTx) WriteCommit(ctx context.Context, w sqlstore.CommitWrite) error {
	*c.wrote = true
	for i, rec := range w.Records {
		if _, err := c.ExecContext(ctx, "INSERT INTO journal (task_id, seq, taken_at, name, record, epoch, verdict) VALUES ($1, $2, $3, $4, $5, 0, $6)",
			w.TaskID, w.Seqs[i], ts(w.Now), w.Names[i], rec, w.Verdicts[i]); err != nil {
			return fmt.Errorf("journal marker %s of task %s: %w", w.Names[i], w.TaskID, err)
		}
	}
	if err := insertState(ctx, c.wtx, w); err != nil {
		return err
	}
	if w.HasState {
		if err := pruneStates(ctx, c.wtx, w.TaskID, w.Keep); err != nil {
			return err
		}
	}
	if err := insertEvents(ctx, c.wtx, w.TaskID, w.Events...); err != nil {
		return err
	}
	return c.DeleteMarkers(ctx, w.TaskID, w.Delete)
}

// DeleteMarkers deletes the markers ids, one statement each.
func (c commitTx) DeleteMarkers(ctx context.Context, taskID string, ids []int64) error {
	if len(ids) > 0 {
		*c.wrote = true
	}
	for _, id := range ids {
		if _, err := c.ExecContext(ctx, "DELETE FROM markers WHERE id = $1", id); err != nil {
			return fmt.Errorf("delete marker %d of task %s: %w", id, taskID, err)
		}
	}
	return nil
}

// insertEvents appends events of a task in tx, as sqlstore's InsertEvents
// does, with no executor between: the commit's own path.
func insertEvents(ctx context.Context, tx wtx, taskID string, evs ...workspace.Event) error {
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", taskID, ts(e.Time), workspace.FormatEvent(e)); err != nil {
			return fmt.Errorf("append event %s: %w", e.Name, err)
		}
	}
	return nil
}
