package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Rebuild derives a task's state from its task row and its journal alone,
// folding the records with the state machine and the plan loader the
// commit uses, without reading the states or backups tables and without
// writing anything. It reads in one read-only snapshot, so a commit
// running meanwhile is seen whole or not at all. For a journal the daemon
// wrote, the result equals the state it wrote after the last record.
func (s *Store) Rebuild(taskID string) (workspace.State, error) {
	ctx, cancel := s.readCtx()
	defer cancel()
	var st workspace.State
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var doc string
		err := tx.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&doc)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.NotFoundTask(taskID)
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
func readJournal(ctx context.Context, tx pgx.Tx, taskID string) ([]workspace.JournalRecord, error) {
	rows, err := tx.Query(ctx, "SELECT seq, record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	if err != nil {
		return nil, fmt.Errorf("read the journal of task %s: %w", taskID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.JournalRecord, error) {
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
}
