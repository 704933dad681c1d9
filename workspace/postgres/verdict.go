package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var _ workspace.VerdictSource = (*Store)(nil)

// VerdictState reads and decodes the task's state (sqlstore.Driver).
func (d driver) VerdictState(ctx context.Context, tx sqlstore.Executor, taskID string, _ workspace.JournalRecord) (workspace.State, error) {
	var doc string
	if err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc); err != nil {
		return workspace.State{}, err
	}
	return sqlstore.DecodeState(taskID, doc)
}

// Serving reports whether a daemon holds the lease now.
func (s *Store) Serving() (bool, error) {
	ctx, cancel := s.readCtx()
	defer cancel()
	li, err := s.Lease(ctx)
	return li.Live, err
}

// Where names the workspace in messages: its schema.
func (s *Store) Where() string { return "the PostgreSQL schema " + s.schema }
