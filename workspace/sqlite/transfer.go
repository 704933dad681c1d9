package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace/tables"
)

// Moving a workspace between the file tree (or another database, through
// one) and a SQLite file: the mapping is workspace/tables, the same as
// PostgreSQL's; this file gives it a transaction.

// ImportOptions says how Import treats a database that already holds a
// workspace: Replace empties it first, else one holding any task, entry
// or event is refused.
type ImportOptions = tables.ImportOptions

// Import loads the file workspace at dir into the database, in one
// transaction: all of it or nothing. The database must hold no workspace
// yet (as init leaves it) unless opt.Replace. A daemon must not be
// serving the tree while it is read.
func (s *Store) Import(ctx context.Context, dir string, opt ImportOptions) (tables.Report, error) {
	load, err := tables.ReadTree(dir)
	if err != nil {
		return tables.Report{}, err
	}
	err = s.write(ctx, func(tx wtx) error {
		t := &sqlTx{tx: tx.Tx, stmts: map[string]*sql.Stmt{}}
		defer t.close()
		// The tree brings its events along: its entries make none.
		if err := t.Exec(ctx, dialect.QuietEntries(true)); err != nil {
			return err
		}
		if err := tables.Clear(ctx, t, opt.Replace, "state_parts", "state_history"); err != nil {
			return err
		}
		for _, r := range load.Rows {
			if err := t.Exec(ctx, r.SQL, r.Args...); err != nil {
				return fmt.Errorf("import %s: %w", dir, err)
			}
		}
		return t.Exec(ctx, dialect.QuietEntries(false))
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
// must not exist or be empty. It reads in one transaction, one snapshot
// of the file (WAL), so a workspace in use exports as it was at one
// moment, and no writer waits for it.
func (s *Store) Export(ctx context.Context, dir string) (tables.Report, error) {
	return tables.Export(ctx, dir, func(f func(tables.Tx) error) error {
		return s.read(ctx, func(tx wtx) error {
			t := &sqlTx{tx: tx.Tx, stmts: map[string]*sql.Stmt{}}
			defer t.close()
			return f(t)
		})
	})
}

// sqlTx is a transaction as workspace/tables uses it: times go in as the
// store keeps them, and each statement is prepared once.
type sqlTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (t *sqlTx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := t.stmts[q]; ok {
		return st, nil
	}
	st, err := t.tx.PrepareContext(ctx, q)
	if err == nil {
		t.stmts[q] = st
	}
	return st, err
}

func (t *sqlTx) close() {
	for _, st := range t.stmts {
		st.Close()
	}
}

func (t *sqlTx) Exec(ctx context.Context, q string, args ...any) error {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return err
	}
	kept := make([]any, len(args))
	for i, a := range args {
		kept[i] = a
		if tm, ok := a.(time.Time); ok {
			kept[i] = exactTS(tm)
		}
	}
	_, err = st.ExecContext(ctx, kept...)
	return err
}

func (t *sqlTx) Query(ctx context.Context, q string, row func(scan func(...any) error) error, args ...any) error {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return tables.EachRow(rows, row)
}

// exactTS is t as the store keeps times, when it is to the millisecond
// (every time workspaced writes), else in full (RFC 3339 with
// nanoseconds, which parseTS also reads), so that an imported entry
// exports byte for byte.
func exactTS(t time.Time) string {
	if t.Equal(t.Truncate(time.Millisecond)) {
		return ts(t)
	}
	return t.UTC().Format(time.RFC3339Nano)
}
