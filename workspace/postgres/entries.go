package postgres

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Entries are the one SQL store's (sqlstore), but for storing one, the
// hot write: here one statement, so one round trip and one commit.

// PutEntry stores an entry's row (sqlstore.Driver) in one statement, so
// one round trip and one commit: the task's existence, the verb the
// entries' trigger gives the event of an upsert that updates ("stored",
// migration 0009), the token the write came with, and no notification
// in the transaction (the settings last the statement's transaction), and
// the upsert, whose trigger appends the event; the notification follows
// the commit (notifier).
func (d driver) PutEntry(ctx context.Context, p sqlstore.EntryPut) (time.Time, int, error) {
	req := &p.Req
	var ok bool
	var created *time.Time
	var version *int
	err := d.s.pool.QueryRow(ctx, `WITH t AS (SELECT ($9::text = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $9))
			AND set_config('workspaced.entry_verb', 'stored', true) = 'stored'
			AND set_config('workspaced.entry_token', $10, true) = $10
			AND set_config('workspaced.events_notify', 'off', true) = 'off' AS ok),
		up AS (INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			SELECT $1, $2, $3, $4, $5, $6, $6, 1, $7, $8 FROM t WHERE t.ok
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version)
		SELECT t.ok, up.created_at, up.version FROM t LEFT JOIN up ON true`,
		string(p.Scope.Kind), p.Owner, req.Key, req.Description, req.Agent, p.At, len(req.Value), string(req.Value), p.Task, workspace.TokenOf(ctx)).Scan(&ok, &created, &version)
	if err != nil {
		return time.Time{}, 0, err
	}
	if !ok {
		return time.Time{}, 0, sqlstore.NotFoundTask(p.Task)
	}
	if sqlstore.MakesEvents(p.Scope) {
		d.s.notes.notify(p.Task)
	}
	return *created, *version, nil
}
