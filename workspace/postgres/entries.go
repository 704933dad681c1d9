package postgres

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Entries are the one SQL store's (sqlstore), but for storing one, the
// hot write: here one statement, so one round trip and one commit.

// PutEntry stores an entry's row and its event (sqlstore.Driver) in one
// statement, so one round trip and one commit: the task's existence, the
// upsert, and the event (whose line ends with the version the upsert
// gives: attrs are sorted, version last).
func (d driver) PutEntry(ctx context.Context, p sqlstore.EntryPut) (time.Time, int, error) {
	req := &p.Req
	line := sqlstore.EntryEventLine(p.Scope, "stored", req.Key, req.Agent, workspace.TokenOf(ctx), 0, p.At)
	var ok bool
	var created *time.Time
	var version *int
	err := d.s.pool.QueryRow(ctx, `WITH t AS (SELECT $9::text = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $9) AS ok),
		up AS (INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			SELECT $1, $2, $3, $4, $5, $6, $6, 1, $7, $8 FROM t WHERE t.ok
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version),
		ev AS (INSERT INTO events (task_id, time, line) SELECT $9, $6, $10 || ' version=' || up.version FROM up WHERE $10 <> '')
		SELECT t.ok, up.created_at, up.version FROM t LEFT JOIN up ON true`,
		string(p.Scope.Kind), p.Owner, req.Key, req.Description, req.Agent, p.At, len(req.Value), string(req.Value), p.Task, line).Scan(&ok, &created, &version)
	if err != nil {
		return time.Time{}, 0, err
	}
	if !ok {
		return time.Time{}, 0, sqlstore.NotFoundTask(p.Task)
	}
	return *created, *version, nil
}
