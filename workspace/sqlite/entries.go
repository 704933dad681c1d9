package sqlite

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Entries are the one SQL store's (sqlstore), but for storing one, the
// hot write: here one write transaction that finds the task, upserts the
// row and appends its event.

var _ workspace.Entries = (*Store)(nil)

// StoreEntry creates or replaces an entry: created_at is kept on replace
// and version bumped, in one write transaction.
func (s *Store) StoreEntry(ctx context.Context, sc workspace.Scope, req workspace.StoreRequest) (workspace.Result, error) {
	own, task, warns, err := sqlstore.CheckStore(sc, req, s.Settings().Limits)
	if err != nil {
		return workspace.Result{}, err
	}
	t := now()
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, UpdatedAt: t, Value: req.Value}
	err = s.write(ctx, func(tx wtx) error {
		ex := sqlstore.Executor(tx)
		if err := sqlstore.RequireOwner(ctx, ex, task); err != nil {
			return err
		}
		var created string
		err := tx.QueryRowContext(ctx, `INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ($1, $2, $3, $4, $5, $6, $6, 1, $7, $8)
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version`,
			string(sc.Kind), own, req.Key, req.Description, req.Agent, ts(t), len(req.Value), string(req.Value)).Scan(&created, &e.Version)
		if err != nil {
			return err
		}
		e.CreatedAt = parseTS(created)
		return s.EntryEvent(ctx, ex, sc, "stored", req.Key, req.Agent, e.Version, t)
	})
	if err != nil {
		return workspace.Result{}, readErr(fmt.Sprintf("store %s %q", sqlstore.Label(sc), req.Key), err)
	}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}
