package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Entries are the one SQL store's (sqlstore), but for storing one, the
// hot write: here one statement, so one round trip and one commit.

var _ workspace.Entries = (*Store)(nil)

// StoreEntry creates or replaces an entry: created_at is kept on replace
// and version bumped, in one statement.
func (s *Store) StoreEntry(ctx context.Context, sc workspace.Scope, req workspace.StoreRequest) (workspace.Result, error) {
	own, task, warns, err := sqlstore.CheckStore(sc, req, s.Settings().Limits)
	if err != nil {
		return workspace.Result{}, err
	}
	t := now()
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, UpdatedAt: t, Value: req.Value}
	// One statement, so one round trip and one commit: the task's
	// existence, the upsert, and the event (whose line ends with the
	// version the upsert gives: attrs are sorted, version last).
	line := sqlstore.EntryEventLine(sc, "stored", req.Key, req.Agent, 0, t)
	var ok bool
	var created *time.Time
	var version *int
	err = s.pool.QueryRow(ctx, `WITH t AS (SELECT $9::text = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $9) AS ok),
		up AS (INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			SELECT $1, $2, $3, $4, $5, $6, $6, 1, $7, $8 FROM t WHERE t.ok
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version),
		ev AS (INSERT INTO events (task_id, time, line) SELECT $9, $6, $10 || ' version=' || up.version FROM up WHERE $10 <> '')
		SELECT t.ok, up.created_at, up.version FROM t LEFT JOIN up ON true`,
		string(sc.Kind), own, req.Key, req.Description, req.Agent, t, len(req.Value), string(req.Value), task, line).Scan(&ok, &created, &version)
	if err != nil {
		return workspace.Result{}, fmt.Errorf("store %s %q: %w", sqlstore.Label(sc), req.Key, err)
	}
	if !ok {
		return workspace.Result{}, sqlstore.NotFoundTask(task)
	}
	e.CreatedAt, e.Version = *created, *version
	e.CreatedAt = e.CreatedAt.UTC()
	return workspace.Result{Entry: e, Warnings: warns}, nil
}
