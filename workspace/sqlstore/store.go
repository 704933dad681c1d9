package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// ReadTimeout bounds each call of the Store that does not take a lock
// (within the caller's context, which may end it sooner).
const ReadTimeout = 30 * time.Second

// Store is a workspace in a SQL database, over its driver. It is safe
// for concurrent use as its driver is. The database stores embed it and
// add what is theirs.
type Store struct {
	d        Driver
	r        Executor
	dl       Dialect
	q        queries
	settings workspace.Settings
	grants   *grantMemory // the grants the tokens' look-ups read (tokens.go)
	excerpts atomic.Bool  // the journal has the verdict column (verdictexcerpt.go)
}

// queries are the statements spelled with the dialect's fragments, made
// once.
type queries struct {
	putBody string
	putFile string
}

func newQueries(dl Dialect) queries {
	return queries{
		putBody: `INSERT INTO products (task_id, path, body) VALUES ($1, $2, $3)
		ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = ` + dl.Now,
		putFile: `INSERT INTO files (path, body) VALUES ($1, $2)
		ON CONFLICT (path) DO UPDATE SET body = excluded.body, updated_at = ` + dl.Now,
	}
}

// New is the store over d, with the default settings until LoadSettings.
func New(d Driver) *Store {
	dl := d.Dialect()
	return &Store{d: d, r: d.Reads(), dl: dl, q: newQueries(dl), settings: workspace.Settings{}.WithDefaults(),
		grants: &grantMemory{m: map[string]rememberedGrant{}}}
}

// Settings are the effective settings (workspace.json over the defaults).
func (s *Store) Settings() workspace.Settings { return s.settings }

// Now is the store's clock, to the millisecond as in the tree.
func (s *Store) Now() time.Time { return Now() }

// Now is the time now in UTC, to the millisecond as in the tree.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// LoadSettings reads workspace.json from the files table, when there is
// one: the limits and the number of backups kept.
func (s *Store) LoadSettings(ctx context.Context) error {
	var body string
	err := s.r.QueryRow(ctx, "SELECT body FROM files WHERE path = 'workspace.json'").Scan(&body)
	if errors.Is(err, ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read workspace.json: %w", err)
	}
	if err := schemas.Validate(schemas.KindWorkspace, []byte(body)); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "load workspace.json", Err: err, Hint: "fix the files row workspace.json or delete it to use the defaults"}
	}
	var st workspace.Settings
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "load workspace.json", Err: err}
	}
	s.settings = st.WithDefaults()
	return nil
}

// RequireTask says ErrNotFound (ErrInvalid for a bad id) unless the task
// exists.
func RequireTask(ctx context.Context, q Executor, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1", taskID).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return NotFoundTask(taskID)
	}
	return err
}

// Collect reads every row of rows with scan; never nil without an error.
func Collect[T any](rows Rows, err error, scan func(Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Strings reads a one-column text result.
func Strings(rows Rows, err error) ([]string, error) {
	return Collect(rows, err, func(r Rows) (string, error) {
		var v string
		return v, r.Scan(&v)
	})
}

// SetSettings replaces the effective settings, as LoadSettings does; a
// test tunes a store so. It must not run while the store is in use.
func (s *Store) SetSettings(st workspace.Settings) { s.settings = st }

// Ready finishes opening a driver's store s over sql: step (checking the
// schema's version, or migrating it), then the settings loaded. When
// either fails s is closed and only the error returned.
func Ready[S io.Closer](ctx context.Context, s S, sql *Store, step func(context.Context) error) (S, error) {
	err := step(ctx)
	if err == nil {
		err = sql.LoadSettings(ctx)
	}
	if err != nil {
		s.Close()
		var none S
		return none, err
	}
	return s, nil
}

// Migrated is Ready with migrate as the step: it returns the store s,
// ready, and how many migrations migrate applied.
func Migrated[S io.Closer](ctx context.Context, s S, sql *Store, migrate func(context.Context) (int, error)) (S, int, error) {
	var n int
	s, err := Ready(ctx, s, sql, func(ctx context.Context) (err error) {
		n, err = migrate(ctx)
		return err
	})
	if err != nil {
		return s, 0, err
	}
	return s, n, nil
}
