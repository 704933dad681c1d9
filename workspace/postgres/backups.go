package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// RestoreState writes a restore (sqlstore.Store.RestoreBackup) under the
// task's row lock: the replaced state (the states row) copied as a
// backup by the server, the oldest beyond r.Keep dropped, and the state
// stamped with the lease's epoch and a new version (which no committer
// holds), the three in one round trip.
func (d driver) RestoreState(ctx context.Context, ex sqlstore.Executor, r sqlstore.Restore) error {
	tx := txOfExec(ex)
	var epoch int64
	if err := tx.QueryRow(ctx, "SELECT epoch FROM lease WHERE id = 1").Scan(&epoch); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue("INSERT INTO backups (task_id, journal_seq, doc) SELECT task_id, journal_seq, doc FROM states WHERE task_id = $1", r.TaskID)
	b.Queue(`DELETE FROM backups WHERE task_id = $1 AND n <= (
		SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC OFFSET $2 LIMIT 1)`, r.TaskID, r.Keep)
	b.Queue("UPDATE states SET journal_seq = $2, doc = $3, epoch = $4, version = version + 1, updated_at = now() WHERE task_id = $1",
		r.TaskID, r.NewSeq, r.NewDoc, epoch)
	return tx.SendBatch(ctx, b).Close()
}
