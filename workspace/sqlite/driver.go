package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// sqlDriver is SQLite under the one SQL store (sqlstore): reads on the
// read pool, every write one BEGIN IMMEDIATE transaction on the write
// connection with the log synced after COMMIT (write), the error codes
// and the dialect.
type sqlDriver struct{ s *Store }

var _ sqlstore.Driver = sqlDriver{}

// dialect is SQLite's SQL where it differs: times are text, UTC to the
// millisecond (timeFormat), and LIKE ignores case, so a prefix is
// compared with substr.
var dialect = sqlstore.Dialect{
	Now:          "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
	Lock:         func(string) string { return "" },
	HasPrefix:    func(col, param string) string { return "substr(" + col + ", 1, length(" + param + ")) = " + param },
	Time:         func(t time.Time) any { return ts(t) },
	ScanTime:     func(t *time.Time) any { return timeText{t} },
	ScanNullTime: func(t *time.Time) any { return timeText{t} },
	EntryIntent:  "UPDATE entry_intent SET verb = nullif($1, ''), agent = nullif($2, ''), token = nullif($3, '')",
	QuietEntries: func(on bool) string {
		if on {
			return "UPDATE entry_intent SET quiet = 1"
		}
		return "UPDATE entry_intent SET quiet = 0"
	},
	// One writer at a time: ids are drawn in commit order.
	EventsAfter: func(_, param string) string { return "id > " + param },
	EventOrder:  "id",
	// A task of 512 entries or more (8 blocks of the encoder's, a
	// document of about 25 KiB) has its states written as parts.
	StatePartsFrom: 512,
	StateRows:      "states",
}

func (d sqlDriver) Reads() sqlstore.Executor    { return (*readExec)(d.s) }
func (d sqlDriver) Dialect() sqlstore.Dialect   { return dialect }
func (d sqlDriver) IsUnique(err error) bool     { return isUnique(err) || isRaised(err) }
func (d sqlDriver) IsForeignKey(err error) bool { return isForeignKey(err) }

func (d sqlDriver) WriteOne(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.s.exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDriver) Read(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return d.s.read(ctx, func(tx wtx) error { return fn(tx) })
}

func (d sqlDriver) Write(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return d.s.write(ctx, func(tx wtx) error { return fn(tx) })
}

// WriteTask holds the task by SQLite's one write transaction at a time;
// it finds the task in it.
func (d sqlDriver) WriteTask(ctx context.Context, taskID string, fn func(tx sqlstore.Executor) error) error {
	return d.s.write(ctx, func(tx wtx) error {
		if err := requireTask(ctx, tx, taskID); err != nil {
			return err
		}
		return fn(tx)
	})
}

// readExec is the read pool as an executor, its statements prepared
// once learned.
type readExec Store

func (r *readExec) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return 0, fmt.Errorf("write on the read pool: %s", q)
}

func (r *readExec) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := (*Store)(r).query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (r *readExec) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return r.rdb.QueryRowContext(ctx, q, args...)
}

func (t wtx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t wtx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (t wtx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.QueryRowContext(ctx, q, args...)
}

// sqlRows are database/sql's rows as the store reads them.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// timeText scans a time kept as text; NULL is the zero time.
type timeText struct{ t *time.Time }

func (s timeText) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*s.t = time.Time{}
	case string:
		*s.t = parseTS(v)
	case []byte:
		*s.t = parseTS(string(v))
	default:
		return fmt.Errorf("a time as %T", v)
	}
	return nil
}

// Batch runs stmts in tx, one after another.
func (d sqlDriver) Batch(ctx context.Context, ex sqlstore.Executor, stmts []string, args ...any) error {
	for _, q := range stmts {
		if _, err := ex.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}
