package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Entries of the four scopes are rows of entries, keyed by scope, owner
// and key; each write is one transaction whose row lock orders concurrent
// writers of a key (no lost update), and which appends the entry's event
// for the thread and session scopes. Keys, values and descriptions are
// checked as on files, and always sent as parameters.

var _ workspace.Entries = (*Store)(nil)

// requireTask fails with ErrNotFound when task (not "") does not exist.
func requireTask(ctx context.Context, tx pgx.Tx, task string) error {
	if task == "" {
		return nil
	}
	var ok bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1)", task).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return sqlstore.NotFoundTask(task)
	}
	return nil
}

// Now is the store's clock.

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

// entryEvent appends env_<verb> (thread scope) or memory_<verb> (session
// scope) to the task's events, in the write's transaction.
func (s *Store) entryEvent(ctx context.Context, tx pgx.Tx, sc workspace.Scope, verb, key, agent string, version int, t time.Time) error {
	line := sqlstore.EntryEventLine(sc, verb, key, agent, version, t)
	if line == "" {
		return nil
	}
	_, err := tx.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", sc.TaskID, t, line)
	return err
}

// GetEntry reads one entry; a missing key is ErrNotFound.
func (s *Store) GetEntry(ctx context.Context, sc workspace.Scope, key string) (workspace.Entry, error) {
	own, _, err := sqlstore.CheckGet(sc, key)
	if err != nil {
		return workspace.Entry{}, err
	}
	var e workspace.Entry
	var value string
	err = s.pool.QueryRow(ctx, `SELECT key, short_description, stored_by, created_at, updated_at, version, value
		FROM entries WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, key).
		Scan(&e.Key, &e.ShortDescription, &e.StoredBy, &e.CreatedAt, &e.UpdatedAt, &e.Version, &value)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, sqlstore.NoSuchKey("get", sc, key)
	}
	if err != nil {
		return e, err
	}
	e.CreatedAt, e.UpdatedAt, e.Value = e.CreatedAt.UTC(), e.UpdatedAt.UTC(), json.RawMessage(value)
	return e, nil
}

// ListEntries lists a scope by key, without reading a value.
func (s *Store) ListEntries(ctx context.Context, sc workspace.Scope) ([]workspace.ManifestItem, error) {
	own, task, err := sqlstore.Owner(sc)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, short_description, stored_by, updated_at, version, size,
		$3 = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $3)
		FROM (SELECT 1) AS one LEFT JOIN entries ON scope = $1 AND owner = $2 ORDER BY key COLLATE "C"`, string(sc.Kind), own, task)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := []workspace.ManifestItem{}
	for rows.Next() {
		var (
			key, desc, by *string
			at            *time.Time
			v             *int
			size          *int64
			taskOK        bool
		)
		if err := rows.Scan(&key, &desc, &by, &at, &v, &size, &taskOK); err != nil {
			return nil, err
		}
		if !taskOK {
			return nil, sqlstore.NotFoundTask(task)
		}
		if key == nil {
			continue // the row of the left join when the scope is empty
		}
		items = append(items, workspace.ManifestItem{Key: *key, ShortDescription: *desc, StoredBy: *by, UpdatedAt: at.UTC(), Version: *v, Size: *size})
	}
	return items, rows.Err()
}

// UpdateEntry changes an existing entry; ErrNotFound when missing,
// ErrConflict when IfVersion no longer matches.
func (s *Store) UpdateEntry(ctx context.Context, sc workspace.Scope, req workspace.UpdateRequest) (workspace.Result, error) {
	own, task, warns, err := sqlstore.CheckUpdate(sc, req, s.Settings().Limits)
	if err != nil {
		return workspace.Result{}, err
	}
	op := sqlstore.UpdateOp(sc, req.Key)
	t := now()
	var e workspace.Entry
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := requireTask(ctx, tx, task); err != nil {
			return err
		}
		var value string
		err := tx.QueryRow(ctx, `SELECT key, short_description, created_at, version, value FROM entries
			WHERE scope = $1 AND owner = $2 AND key = $3 FOR UPDATE`, string(sc.Kind), own, req.Key).
			Scan(&e.Key, &e.ShortDescription, &e.CreatedAt, &e.Version, &value)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.NoKeyToUpdate(op)
		}
		if err != nil {
			return err
		}
		e.Value, e.CreatedAt = json.RawMessage(value), e.CreatedAt.UTC()
		if err := sqlstore.ApplyUpdate(&e, req, op, t); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE entries SET short_description = $4, stored_by = $5, updated_at = $6, version = $7, size = $8, value = $9
			WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, req.Key,
			e.ShortDescription, e.StoredBy, t, e.Version, len(e.Value), string(e.Value)); err != nil {
			return err
		}
		return s.entryEvent(ctx, tx, sc, "updated", e.Key, req.Agent, e.Version, t)
	})
	if err != nil {
		return workspace.Result{}, err
	}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// DeleteEntry removes a key; a missing key is ErrNotFound.
func (s *Store) DeleteEntry(ctx context.Context, sc workspace.Scope, key, agent string) error {
	own, task, err := sqlstore.CheckDelete(sc, key, agent)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := requireTask(ctx, tx, task); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM entries WHERE scope = $1 AND owner = $2 AND key = $3", string(sc.Kind), own, key)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return sqlstore.NoSuchKey("delete", sc, key)
		}
		return s.entryEvent(ctx, tx, sc, "deleted", key, agent, 0, now())
	})
}
