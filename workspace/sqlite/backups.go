package sqlite

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A task's states are rows of state_history (migration 0008): the newest
// row written as a state is the current one (the states view), the rows
// before it the backups (the backups view). A commit or a restore inserts
// the new state as a row, so the one it replaces becomes a backup where
// it lies: the document is written once, never copied.

// RestoreState writes a restore (sqlstore.Store.RestoreBackup) in its
// write transaction: the chosen document inserted as the task's state
// under a new version, which no committer holds (the current one plus
// one), the state it replaces kept as the newest backup and the oldest
// beyond r.Keep dropped.
func (d sqlDriver) RestoreState(ctx context.Context, ex sqlstore.Executor, r sqlstore.Restore) error {
	tx := ex.(wtx)
	if _, err := tx.ExecContext(ctx, `INSERT INTO state_history (task_id, journal_seq, version, updated_at, doc)
		SELECT task_id, $2, version + 1, $4, $3 FROM states WHERE task_id = $1`,
		r.TaskID, r.NewSeq, r.NewDoc, ts(now())); err != nil {
		return fmt.Errorf("write the restored state of task %s: %w", r.TaskID, err)
	}
	return pruneStates(ctx, tx, r.TaskID, r.Keep)
}

// insertState inserts a new state of the task: it is the current one from
// here on.
func insertState(ctx context.Context, tx wtx, w sqlstore.CommitWrite) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO state_history (task_id, journal_seq, version, updated_at, doc) VALUES ($1, $2, $3, $4, $5)",
		w.TaskID, w.Seq, w.Version, ts(w.Now), w.Doc)
	if err != nil {
		return fmt.Errorf("write the state of task %s: %w", w.TaskID, err)
	}
	return nil
}

// pruneStates drops the task's rows beyond the newest keep+1: the state
// and keep backups.
func pruneStates(ctx context.Context, tx wtx, taskID string, keep int) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM state_history WHERE task_id = $1 AND n <= (
		SELECT n FROM state_history WHERE task_id = $1 ORDER BY n DESC LIMIT 1 OFFSET $2)`, taskID, keep+1)
	if err != nil {
		return fmt.Errorf("prune the backups of task %s: %w", taskID, err)
	}
	return nil
}
