package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Tasks and the agent cards: task.json is a row of tasks, its root thread
// a row of threads, and config/agents.json a row of files, each the bytes
// the tree would hold.

// lockTask takes the task's row lock for a write that must not interleave
// with the daemon's commit of the task (which takes the row FOR SHARE):
// FOR NO KEY UPDATE, so agents' markers (whose foreign key takes KEY
// SHARE) still go in. ErrNotFound when there is no such task.
func lockTask(ctx context.Context, tx pgx.Tx, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := tx.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1 FOR NO KEY UPDATE", taskID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.NotFoundTask(taskID)
	}
	return err
}
