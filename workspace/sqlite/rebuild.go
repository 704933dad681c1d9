package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Rebuild derives a task's state from its task row and its journal alone
// (workspace.Rebuilder), folding the records with the state machine and
// the plan loader the commit uses, without reading the states or backups
// tables and without writing anything. It reads one snapshot, so a
// commit running meanwhile is seen whole or not at all.
func (s *Store) Rebuild(taskID string) (workspace.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var st workspace.State
	err := s.read(ctx, func(tx wtx) error {
		var doc string
		err := tx.QueryRowContext(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&doc)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundTask(taskID)
		}
		if err != nil {
			return fmt.Errorf("read task %s: %w", taskID, err)
		}
		task, err := sqlstore.DecodeTask(taskID, doc)
		if err != nil {
			return err
		}
		recs, err := readJournal(ctx, tx, taskID)
		if err != nil {
			return err
		}
		st, err = sqlstore.Rebuild(task, recs, func(st workspace.State) func(int) (*workspace.Plan, error) {
			return s.planLoader(ctx, tx, taskID, st)
		})
		return err
	})
	if err != nil {
		return workspace.State{}, err
	}
	return st, nil
}

// readJournal reads a task's journal records in sequence order; a record
// that does not parse is an error naming its seq.
func readJournal(ctx context.Context, tx querier, taskID string) ([]workspace.JournalRecord, error) {
	rows, err := tx.QueryContext(ctx, "SELECT seq, record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	recs, err := collect(rows, err, func(r *sql.Rows) (workspace.JournalRecord, error) {
		var (
			seq  int64
			body string
			rec  workspace.JournalRecord
		)
		if err := r.Scan(&seq, &body); err != nil {
			return rec, err
		}
		return sqlstore.DecodeJournalRecord(taskID, seq, body)
	})
	if err != nil {
		return nil, readErr("read the journal of task "+taskID, err)
	}
	return recs, nil
}
