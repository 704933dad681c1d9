package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// driver is PostgreSQL under the one SQL store (sqlstore): the pool, a
// write transaction that holds a task by its row lock, the error codes
// and the dialect. Its executors call pgx directly.
type driver struct{ pool *pgxpool.Pool }

var _ sqlstore.Driver = driver{}

// dialect is PostgreSQL's SQL where it differs.
var dialect = sqlstore.Dialect{
	Collate:      ` COLLATE "C"`,
	Now:          "now()",
	Lock:         func(mode string) string { return " FOR " + mode },
	HasPrefix:    func(col, param string) string { return "starts_with(" + col + ", " + param + ")" },
	Time:         func(t time.Time) any { return t },
	ScanTime:     func(t *time.Time) any { return t },
	ScanNullTime: func(t *time.Time) any { return nullTime{t} },
}

// nullTime scans a timestamptz that may be NULL (the zero time).
type nullTime struct{ t *time.Time }

func (n nullTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*n.t = time.Time{}
	case time.Time:
		*n.t = v
	default:
		return fmt.Errorf("a time as %T", v)
	}
	return nil
}

func (d driver) Reads() sqlstore.Executor    { return (*poolExec)(d.pool) }
func (d driver) Dialect() sqlstore.Dialect   { return dialect }
func (d driver) IsUnique(err error) bool     { return isUnique(err) }
func (d driver) IsForeignKey(err error) bool { return isForeignKey(err) }

func (d driver) WriteOne(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := d.pool.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (d driver) Read(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(txExec{tx})
	})
}

func (d driver) Write(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(txExec{tx}) })
}

// WriteTask holds the task by its row lock (lockTask) for the
// transaction.
func (d driver) WriteTask(ctx context.Context, taskID string, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if err := lockTask(ctx, tx, taskID); err != nil {
			return err
		}
		return fn(txExec{tx})
	})
}

// poolExec is the pool as an executor.
type poolExec pgxpool.Pool

func (p *poolExec) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := (*pgxpool.Pool)(p).Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (p *poolExec) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return (*pgxpool.Pool)(p).Query(ctx, q, args...)
}

func (p *poolExec) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return (*pgxpool.Pool)(p).QueryRow(ctx, q, args...)
}

// txExec is a transaction as an executor.
type txExec struct{ tx pgx.Tx }

func (t txExec) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t txExec) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return t.tx.Query(ctx, q, args...)
}

func (t txExec) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRow(ctx, q, args...)
}
