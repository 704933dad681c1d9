package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A task's state is its row of state_rows, its backups rows of
// backup_rows (the states and backups views give them as they were
// before migration 0014). A row written by a commit of a large task holds
// the ids of its parts (state_parts) instead of the document, so that a
// backup, a copy of the row, copies the ids, and a commit inserts the
// parts its markers changed.

// assembledDoc is the document of the row s of state_rows or
// backup_rows: its doc, or when written as parts (doc NULL) their bodies
// joined in the order its parts list them, as the views give it.
const assembledDoc = `coalesce(s.doc, (SELECT string_agg(p.body, '' ORDER BY u.ord)
	FROM unnest(s.parts) WITH ORDINALITY u(id, ord) JOIN state_parts p ON p.id = u.id))`

// RestoreState writes a restore (sqlstore.Store.RestoreBackup) under the
// task's row lock: the replaced state copied as a backup by the server
// (its row: the ids of its parts, or its document), the oldest beyond
// r.Keep dropped, and the state written whole, stamped with the lease's
// epoch and a new version (which no committer holds), in one round trip
// after the lease's read.
func (d driver) RestoreState(ctx context.Context, ex sqlstore.Executor, r sqlstore.Restore) error {
	tx := txOfExec(ex)
	var epoch int64
	if err := tx.QueryRow(ctx, "SELECT epoch FROM lease WHERE id = 1").Scan(&epoch); err != nil {
		return err
	}
	b := &pgx.Batch{}
	queueBackup(b, r.TaskID, r.Keep, true, nil)
	b.Queue("UPDATE state_rows SET journal_seq = $2, doc = $3, parts = NULL, epoch = $4, version = version + 1, updated_at = now() WHERE task_id = $1",
		r.TaskID, r.NewSeq, r.NewDoc, epoch)
	return tx.SendBatch(ctx, b).Close()
}

// queueBackup queues the copy of the task's state row as its newest
// backup, the marking of the parts the state about to be written no
// longer holds (every part the old row held when all, else replaced)
// replaced at that backup, and the deletion of the backups beyond keep
// with the parts no row kept holds: those replaced at or before the
// newest backup deleted. The state row is written after it.
func queueBackup(b *pgx.Batch, taskID string, keep int, all bool, replaced []int64) {
	b.Queue("INSERT INTO backup_rows (task_id, journal_seq, doc, parts) SELECT task_id, journal_seq, doc, parts FROM state_rows WHERE task_id = $1", taskID)
	switch {
	case all:
		b.Queue(`UPDATE state_parts SET replaced_at = (SELECT max(n) FROM backup_rows WHERE task_id = $1)
			WHERE task_id = $1 AND replaced_at IS NULL`, taskID)
	case len(replaced) > 0:
		b.Queue(`UPDATE state_parts SET replaced_at = (SELECT max(n) FROM backup_rows WHERE task_id = $1)
			WHERE id = ANY($2)`, taskID, replaced)
	}
	b.Queue(`WITH gone AS (DELETE FROM backup_rows WHERE task_id = $1 AND n <= (
			SELECT n FROM backup_rows WHERE task_id = $1 ORDER BY n DESC OFFSET $2 LIMIT 1) RETURNING n)
		DELETE FROM state_parts WHERE task_id = $1 AND replaced_at <= (SELECT max(n) FROM gone)`, taskID, keep)
}

// queueParts queues the writing of w's state as parts, in one statement:
// the parts not stored yet inserted in order, and the state row (updated,
// or inserted when the task has none) listing its parts' ids; the ids of
// the parts inserted are set in w.Parts once the batch is read. The ids
// of the rows one INSERT … SELECT makes rise in the order the SELECT
// gives them, so the k-th smallest new id is the k-th new part's.
func queueParts(b *pgx.Batch, w sqlstore.CommitWrite) {
	var bodies []string
	ids := make([]int64, len(w.Parts))
	for i, p := range w.Parts {
		ids[i] = p.ID
		if p.ID == 0 {
			bodies = append(bodies, p.Body)
			ids[i] = -int64(len(bodies)) // the k-th new part
		}
	}
	const parts = `WITH ins AS (
			INSERT INTO state_parts (task_id, body) SELECT $1, body FROM unnest($2::text[]) WITH ORDINALITY u(body, k) ORDER BY k RETURNING id
		), made AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM ins), list AS (
			SELECT array_agg(coalesce(m.id, u.id) ORDER BY u.ord) AS ids FROM unnest($3::bigint[]) WITH ORDINALITY u(id, ord) LEFT JOIN made m ON m.k = -u.id
		)`
	q := parts + ` UPDATE state_rows SET journal_seq = $4, doc = NULL, parts = (SELECT ids FROM list), epoch = $5, version = $6, updated_at = now()
		WHERE task_id = $1 RETURNING parts`
	if !w.HasState {
		q = parts + ` INSERT INTO state_rows (task_id, journal_seq, parts, epoch, version) SELECT $1, $4, ids, $5, $6 FROM list RETURNING parts`
	}
	b.Queue(q, w.TaskID, bodies, ids, w.Seq, w.Epoch, w.Version).QueryRow(func(row pgx.Row) error {
		var got []int64
		if err := row.Scan(&got); err != nil {
			return err
		}
		if len(got) != len(w.Parts) {
			return fmt.Errorf("the state row lists %d parts, not %d", len(got), len(w.Parts))
		}
		for i := range w.Parts {
			w.Parts[i].ID = got[i]
		}
		return nil
	})
}
