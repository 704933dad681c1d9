package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Committing on PostgreSQL: sqlstore's commit, each of its phases' reads
// and writes sent to the server in one round trip, fenced by the lease.

var _ workspace.Served = (*Store)(nil)

// Committer is the daemon's handle on task id (workspace.Served).
func (s *Store) Committer(id string) workspace.Committer {
	return s.NewCommitter(id, func(ctx context.Context, fn func(sqlstore.CommitTx) error) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(commitTx{txOf(tx), tx}) })
	})
}

// commitTx is a commit's transaction (sqlstore.CommitTx).
type commitTx struct {
	sqlstore.Executor
	tx pgx.Tx
}

// ReadCommit sends the reads to the server in one round trip, in this
// order. Fencing: the lease row is read with a share lock, so a takeover
// (which updates it) waits for this transaction, and this one sees a
// takeover committed before it. The task's row FOR SHARE: a product
// writer (lockTask) holds it FOR NO KEY UPDATE while it decides whether a
// product is final. Then the state for update, the journal records after
// it and the markers waiting, each with whether its name is journaled
// already; the state's document (assembled from its parts when written
// so) only when the row's stamp is not mine. A task gone is pgx.ErrNoRows.
func (c commitTx) ReadCommit(ctx context.Context, taskID string, max int, mine sqlstore.Stamp) (sqlstore.CommitRead, error) {
	var (
		r   sqlstore.CommitRead
		one int
	)
	b := &pgx.Batch{}
	b.Queue("SELECT epoch FROM lease WHERE id = 1 FOR SHARE").QueryRow(func(row pgx.Row) error { return row.Scan(&r.Epoch) })
	b.Queue("SELECT 1 FROM tasks WHERE id = $1 FOR SHARE", taskID).QueryRow(func(row pgx.Row) error { return row.Scan(&one) })
	b.Queue(`SELECT CASE WHEN version = $2 AND version > 0 AND epoch = $3 THEN NULL ELSE `+assembledDoc+` END, journal_seq, version
		FROM state_rows s WHERE task_id = $1 FOR UPDATE`, taskID, mine.Version, mine.Epoch).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var doc *string
			if err := rows.Scan(&doc, &r.PrevSeq, &r.PrevVersion); err != nil {
				return err
			}
			r.HasState, r.Mine = true, doc == nil
			if doc != nil {
				r.Prev = *doc
			}
		}
		return rows.Err()
	})
	b.Queue(`SELECT record FROM journal WHERE task_id = $1
		AND seq > coalesce((SELECT journal_seq FROM state_rows WHERE task_id = $1), 0) ORDER BY seq`, taskID).Query(func(rows pgx.Rows) error {
		var err error
		r.After, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue(`SELECT id, kind, name, body, dropped_at,
		EXISTS (SELECT 1 FROM journal j WHERE j.task_id = m.task_id AND j.name = m.name)
		FROM markers m WHERE task_id = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, taskID, max).Query(func(rows pgx.Rows) error {
		var err error
		r.Markers, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (sqlstore.Marker, error) {
			var m sqlstore.Marker
			err := row.Scan(&m.ID, &m.Kind, &m.Name, &m.Body, &m.DroppedAt, &m.Taken)
			return m, err
		})
		return err
	})
	return r, c.tx.SendBatch(ctx, b).Close()
}

// ReadProducts reads the products at paths and planPaths in one query.
func (c commitTx) ReadProducts(ctx context.Context, taskID string, paths, planPaths []string) (map[string][]byte, map[string]string, error) {
	products, plans := map[string][]byte{}, map[string]string{}
	rows, err := c.tx.Query(ctx, "SELECT path, body, path = ANY($2), path = ANY($3) FROM products WHERE task_id = $1 AND (path = ANY($2) OR path = ANY($3))",
		taskID, paths, planPaths)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p, body string
		var named, plan bool
		if err := rows.Scan(&p, &body, &named, &plan); err != nil {
			return nil, nil, err
		}
		if named {
			products[p] = []byte(body)
		}
		if plan {
			plans[p] = body
		}
	}
	return products, plans, rows.Err()
}

// WriteCommit sends the commit's writes in one round trip: the journal
// rows, the state row copied as a backup (queueBackup), the new state
// (whole, or its new parts and the row listing them: queueParts), its
// events, and the markers deleted.
func (c commitTx) WriteCommit(ctx context.Context, w sqlstore.CommitWrite) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO journal (task_id, seq, taken_at, name, record, epoch, verdict)
		SELECT $1, s, $2, n, r, $3, v FROM unnest($4::bigint[], $5::text[], $6::text[], $7::text[]) AS u(s, n, r, v)`,
		w.TaskID, w.Now, w.Epoch, w.Seqs, w.Names, w.Records, w.Verdicts)
	if w.HasState {
		queueBackup(b, w.TaskID, w.Keep, !w.Follows, w.Replaced)
		if w.Parts == nil {
			b.Queue("UPDATE state_rows SET journal_seq = $2, doc = $3, parts = NULL, epoch = $4, version = $5, updated_at = now() WHERE task_id = $1",
				w.TaskID, w.Seq, w.Doc, w.Epoch, w.Version)
		}
	} else if w.Parts == nil {
		b.Queue("INSERT INTO state_rows (task_id, journal_seq, doc, epoch, version) VALUES ($1, $2, $3, $4, $5)", w.TaskID, w.Seq, w.Doc, w.Epoch, w.Version)
	}
	if w.Parts != nil {
		queueParts(b, w)
	}
	if len(w.Events) > 0 {
		times, lines := make([]time.Time, len(w.Events)), make([]string, len(w.Events))
		for i, e := range w.Events {
			times[i], lines[i] = e.Time, workspace.FormatEvent(e)
		}
		b.Queue(`INSERT INTO events (task_id, time, line) SELECT $1, t, l FROM unnest($2::timestamptz[], $3::text[]) AS u(t, l)`,
			w.TaskID, times, lines)
	}
	b.Queue("DELETE FROM markers WHERE id = ANY($1)", w.Delete)
	if err := c.tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write the commit of task %s: %w", w.TaskID, err)
	}
	return nil
}

// DeleteMarkers deletes the markers passed over.
func (c commitTx) DeleteMarkers(ctx context.Context, taskID string, ids []int64) error {
	if _, err := c.tx.Exec(ctx, "DELETE FROM markers WHERE id = ANY($1)", ids); err != nil {
		return fmt.Errorf("pass over reused marker names of task %s: %w", taskID, err)
	}
	return nil
}
