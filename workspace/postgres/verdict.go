package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var _ workspace.VerdictSource = (*Store)(nil)

// VerdictState reads of the task's state what the verdict on rec needs
// (sqlstore.Driver): workspace.ParseVerdictState decodes its head, the
// subtask rec names and the errors of rec's seq, and only scans past the
// rest, so a verdict in a task of 10,000 subtasks does not decode them all.
func (d driver) VerdictState(ctx context.Context, tx sqlstore.Executor, taskID string, rec workspace.JournalRecord) (workspace.State, error) {
	var doc string
	if err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc); err != nil {
		return workspace.State{}, err
	}
	return workspace.ParseVerdictState(taskID, []byte(doc), rec.Marker.SubtaskID, rec.Seq)
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
