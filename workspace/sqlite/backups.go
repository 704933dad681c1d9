package sqlite

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// RestoreState writes a restore (sqlstore.Store.RestoreBackup) in its
// write transaction: the replaced state (the states row) kept as
// a backup, the oldest beyond r.Keep dropped, and the state replaced
// under a new version, which no committer holds.
func (d sqlDriver) RestoreState(ctx context.Context, ex sqlstore.Executor, r sqlstore.Restore) error {
	tx := ex.(wtx)
	if err := keepBackup(ctx, tx, r.TaskID, r.Keep); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "UPDATE states SET journal_seq = $2, doc = $3, version = version + 1, updated_at = $4 WHERE task_id = $1",
		r.TaskID, r.NewSeq, r.NewDoc, ts(now()))
	return err
}

// keepBackup copies the task's states row as its newest backup (the
// database copies it: the document is not sent again) and drops the
// oldest beyond keep.
func keepBackup(ctx context.Context, tx wtx, taskID string, keep int) error {
	if _, err := tx.ExecContext(ctx, "INSERT INTO backups (task_id, journal_seq, doc, saved_at) SELECT task_id, journal_seq, doc, $2 FROM states WHERE task_id = $1",
		taskID, ts(now())); err != nil {
		return fmt.Errorf("keep a backup of task %s: %w", taskID, err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM backups WHERE task_id = $1 AND n <= (
		SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC LIMIT 1 OFFSET $2)`, taskID, keep)
	if err != nil {
		return fmt.Errorf("prune the backups of task %s: %w", taskID, err)
	}
	return nil
}
