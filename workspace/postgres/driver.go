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
type driver struct{ s *Store }

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
	EntryIntent: "SELECT set_config('workspaced.entry_verb', $1, true), set_config('workspaced.entry_agent', $2, true), " +
		"set_config('workspaced.entry_token', $3, true)",
	QuietEntries: func(on bool) string {
		if on {
			return "SELECT set_config('workspaced.entry_events', 'off', true)"
		}
		return "SELECT set_config('workspaced.entry_events', '', true)"
	},
	EventsAfter: eventsAfter,
	EventOrder:  "xid, id",
	// As on SQLite: below it the parts' statements cost more than the
	// document they save (docs/PERFORMANCE.md).
	StatePartsFrom: 512,
	// The states view joins the parts LATERAL (migration
	// 0015_state_views_lateral): PostgreSQL locks no row through it.
	StateRows: "state_rows",
}

// eventsAfter is the condition selecting the rows of table (events,
// memory_events) a reader reads next after the row of id param
// (migration 0009): the rows after it in (xid, id) order whose
// transaction is older than every one still running, so that no row can
// come before them later. A position that names no row (0, or one
// removed) reads on from the rows of xid 0 after it.
func eventsAfter(table, param string) string {
	return "(xid, id) > (coalesce((SELECT p.xid FROM " + table + " p WHERE p.id = " + param + "), '0'::xid8), " + param + ")" +
		" AND xid < pg_snapshot_xmin(pg_current_snapshot())"
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

func (d driver) Reads() sqlstore.Executor    { return (*poolExec)(d.s.pool) }
func (d driver) Dialect() sqlstore.Dialect   { return dialect }
func (d driver) IsUnique(err error) bool     { return isUnique(err) }
func (d driver) IsForeignKey(err error) bool { return isForeignKey(err) }

func (d driver) WriteOne(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := d.s.pool.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (d driver) Read(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginTxFunc(ctx, d.s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(txOf(tx))
	})
}

func (d driver) Write(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginFunc(ctx, d.s.pool, func(tx pgx.Tx) error { return fn(txOf(tx)) })
}

// WriteTask holds the task by its row lock (lockTask) for the
// transaction.
func (d driver) WriteTask(ctx context.Context, taskID string, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginFunc(ctx, d.s.pool, func(tx pgx.Tx) error {
		if err := lockTask(ctx, tx, taskID); err != nil {
			return err
		}
		return fn(txOf(tx))
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

// txOf is tx as an executor: a transaction of the pool is one with no
// allocation (a pointer to it), any other is wrapped.
func txOf(tx pgx.Tx) sqlstore.Executor {
	if t, ok := tx.(*pgxpool.Tx); ok {
		return (*txExec)(t)
	}
	return otherTx{tx}
}

// txOfExec is the pgx transaction of an executor txOf made.
func txOfExec(ex sqlstore.Executor) pgx.Tx {
	if t, ok := ex.(*txExec); ok {
		return (*pgxpool.Tx)(t)
	}
	return ex.(otherTx).tx
}

// txExec is a transaction of the pool as an executor.
type txExec pgxpool.Tx

func (t *txExec) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := (*pgxpool.Tx)(t).Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t *txExec) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return (*pgxpool.Tx)(t).Query(ctx, q, args...)
}

func (t *txExec) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return (*pgxpool.Tx)(t).QueryRow(ctx, q, args...)
}

// otherTx is any other transaction as an executor.
type otherTx struct{ tx pgx.Tx }

func (t otherTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t otherTx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return t.tx.Query(ctx, q, args...)
}

func (t otherTx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRow(ctx, q, args...)
}

// Batch runs stmts in tx in one round trip.
func (d driver) Batch(ctx context.Context, ex sqlstore.Executor, stmts []string, args ...any) error {
	b := &pgx.Batch{}
	for _, q := range stmts {
		b.Queue(q, args...)
	}
	return txOfExec(ex).SendBatch(ctx, b).Close()
}
