package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var _ workspace.VerdictSource = (*Store)(nil)

// ReadVerdict says where the marker name of a task stands: waiting (its
// row is in markers), decided (a journal row of that name past after:
// the daemon journals a marker and writes the state reflecting it in
// one transaction, so a taken marker is always decided), or missing. A
// journal row of that name at or before after is another marker's: the
// marker reused its name and is refused for it (machine.JudgeReused), as
// the store refuses it at once when it is dropped.
func (s *Store) ReadVerdict(taskID, name string, after int64) (workspace.Verdict, string, error) {
	if err := sqlstore.CheckVerdictName(name); err != nil {
		return workspace.Verdict{}, "", err
	}
	ctx, cancel := s.readCtx()
	defer cancel()
	var (
		rec   workspace.JournalRecord
		where = workspace.MarkerMissing
		st    workspace.State
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var waiting bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM markers WHERE task_id = $1 AND name = $2)", taskID, name).Scan(&waiting); err != nil {
			return err
		}
		if waiting {
			where = workspace.MarkerWaiting
			return nil
		}
		var body string
		err := tx.QueryRow(ctx, "SELECT record FROM journal WHERE task_id = $1 AND name = $2 ORDER BY seq DESC LIMIT 1", taskID, name).Scan(&body)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec, err = sqlstore.DecodeRecord(name, body); err != nil {
			return err
		}
		var doc string
		if err := tx.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc); err != nil {
			return err
		}
		if st, err = sqlstore.DecodeState(taskID, doc); err != nil {
			return err
		}
		where = workspace.MarkerDecided
		return nil
	})
	if err != nil {
		return workspace.Verdict{}, "", sqlstore.ReadErr("read the verdict on marker "+name, err)
	}
	v, where := sqlstore.Verdict(st, rec, taskID, name, where, after)
	return v, where, nil
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
