package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace/tables"
)

// Moving a workspace between the file tree and PostgreSQL: the mapping
// is workspace/tables, the same for every database backend; this file
// gives it a transaction.

// ImportOptions says how Import treats a schema that already holds a
// workspace: Replace empties it first, else one holding any task, entry
// or event is refused.
type ImportOptions = tables.ImportOptions

// Import loads the file workspace at dir into the store's schema, in one
// transaction: all of it or nothing. The schema must hold no workspace
// yet (an initialized one, as init leaves it) unless opt.Replace. A
// daemon must not be serving the tree while it is read.
func (s *Store) Import(ctx context.Context, dir string, opt ImportOptions) (tables.Report, error) {
	load, err := tables.ReadTree(dir)
	if err != nil {
		return tables.Report{}, err
	}
	batch := &pgx.Batch{}
	for _, r := range load.Rows {
		batch.Queue(r.SQL, r.Args...)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The tree brings its events along: its entries make none.
		if _, err := tx.Exec(ctx, dialect.QuietEntries(true)); err != nil {
			return err
		}
		// friction: the log's lines of the first schema version;
		// state_parts: the parts of the states and backups replaced.
		if err := tables.Clear(ctx, pgTx{tx}, opt.Replace, "friction", "state_parts"); err != nil {
			return err
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return tables.Report{}, err
	}
	if err := s.LoadSettings(ctx); err != nil {
		return tables.Report{}, err
	}
	return load.Report, nil
}

// Export writes the workspace as the canonical file tree into dir, which
// must not exist or be empty. It reads one snapshot of the database (a
// repeatable-read transaction), so a workspace in use exports as it was
// at one moment.
func (s *Store) Export(ctx context.Context, dir string) (tables.Report, error) {
	return tables.Export(ctx, dir, func(f func(tables.Tx) error) error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			return f(pgTx{tx})
		})
	})
}

// pgTx is a transaction as workspace/tables uses it.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.Exec(ctx, sql, args...)
	return err
}

func (t pgTx) Query(ctx context.Context, sql string, row func(scan func(...any) error) error, args ...any) error {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return tables.EachRow(rows, row)
}
