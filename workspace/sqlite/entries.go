package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Entries of the four scopes are rows of entries, keyed by scope, owner
// and key; each write is one transaction whose row lock orders concurrent
// writers of a key (no lost update), and which appends the entry's event
// for the thread and session scopes. Keys, values and descriptions are
// checked as on files, and always sent as parameters.

var _ workspace.Entries = (*Store)(nil)

// owner is the scope's owner column, after checking its ids; task is the
// task the scope belongs to ("" for agent and global).
func owner(s workspace.Scope) (own, task string, err error) {
	if _, err := s.Dir(); err != nil {
		return "", "", err
	}
	switch s.Kind {
	case workspace.ScopeThread:
		return s.TaskID, s.TaskID, nil
	case workspace.ScopeSession:
		return s.TaskID + "/" + s.ThreadID, s.TaskID, nil
	case workspace.ScopeAgent:
		return s.Agent, "", nil
	}
	return "", "", nil
}

// label names the scope in messages, as on files.
func label(s workspace.Scope) string {
	if s.Kind == workspace.ScopeThread {
		return "env data"
	}
	return string(s.Kind) + " memory"
}

func (s *Store) checkValue(v json.RawMessage) ([]string, error) {
	lim := s.settings.Limits
	if len(v) == 0 {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Msg: "missing value", Field: workspace.FieldValue,
			Hint: `give a JSON value, e.g. {"a":1} or "text"`}
	}
	if len(v) > lim.ValueMaxBytes {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Field: workspace.FieldValue,
			Msg:  fmt.Sprintf("value is %d bytes, over the %d-byte limit", len(v), lim.ValueMaxBytes),
			Hint: "store large data as several keys or as files in the task directory"}
	}
	if _, err := workspace.ParseValue(v, lim.MaxDepth); err != nil {
		return nil, err
	}
	if len(v) > lim.ValueWarnBytes {
		return []string{fmt.Sprintf("value is %d bytes, over the %d-byte warning size: consider splitting it", len(v), lim.ValueWarnBytes)}, nil
	}
	return nil, nil
}

// requireOwner fails with ErrNotFound when task (not "") does not exist.
func requireOwner(ctx context.Context, tx wtx, task string) error {
	if task == "" {
		return nil
	}
	return requireTask(ctx, tx, task)
}

// StoreEntry creates or replaces an entry: created_at is kept on replace
// and version bumped, in one statement.
func (s *Store) StoreEntry(ctx context.Context, sc workspace.Scope, req workspace.StoreRequest) (workspace.Result, error) {
	own, task, err := owner(sc)
	if err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateKey(req.Key); err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateID("agent", req.Agent); err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateDescription(req.Description); err != nil {
		return workspace.Result{}, err
	}
	warns, err := s.checkValue(req.Value)
	if err != nil {
		return workspace.Result{}, err
	}
	t := now()
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, UpdatedAt: t, Value: req.Value}
	err = s.write(ctx, func(tx wtx) error {
		if err := requireOwner(ctx, tx, task); err != nil {
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
		return s.entryEvent(ctx, tx, sc, "stored", req.Key, req.Agent, e.Version, t)
	})
	if err != nil {
		return workspace.Result{}, readErr(fmt.Sprintf("store %s %q", label(sc), req.Key), err)
	}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// entryEvent appends env_<verb> (thread scope) or memory_<verb> (session
// scope) to the task's events, in the write's transaction.
func (s *Store) entryEvent(ctx context.Context, tx wtx, sc workspace.Scope, verb, key, agent string, version int, t time.Time) error {
	if sc.Kind != workspace.ScopeThread && sc.Kind != workspace.ScopeSession {
		return nil
	}
	attrs := map[string]string{"key": key, "agent": agent}
	if version > 0 {
		attrs["version"] = strconv.Itoa(version)
	}
	name := "env_" + verb
	if sc.Kind == workspace.ScopeSession {
		attrs["scope"], attrs["thread"] = "session", sc.ThreadID
		name = "memory_" + verb
	}
	line := workspace.FormatEvent(workspace.Event{Time: t, Name: name, TaskID: sc.TaskID, Attrs: attrs})
	_, err := tx.ExecContext(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", sc.TaskID, ts(t), line)
	return err
}

// GetEntry reads one entry; a missing key is ErrNotFound.
func (s *Store) GetEntry(ctx context.Context, sc workspace.Scope, key string) (workspace.Entry, error) {
	own, _, err := owner(sc)
	if err != nil {
		return workspace.Entry{}, err
	}
	if err := workspace.ValidateKey(key); err != nil {
		return workspace.Entry{}, err
	}
	var e workspace.Entry
	var value, created, updated string
	err = s.rdb.QueryRowContext(ctx, `SELECT key, short_description, stored_by, created_at, updated_at, version, value
		FROM entries WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, key).
		Scan(&e.Key, &e.ShortDescription, &e.StoredBy, &created, &updated, &e.Version, &value)
	if errors.Is(err, sql.ErrNoRows) {
		return e, &workspace.Error{Kind: workspace.ErrNotFound, Op: fmt.Sprintf("get %s %q", label(sc), key), Msg: "no such key",
			Hint: "list the keys of the scope"}
	}
	if err != nil {
		return e, err
	}
	e.CreatedAt, e.UpdatedAt, e.Value = parseTS(created), parseTS(updated), json.RawMessage(value)
	return e, nil
}

// ListEntries lists a scope by key, without reading a value.
func (s *Store) ListEntries(ctx context.Context, sc workspace.Scope) ([]workspace.ManifestItem, error) {
	own, task, err := owner(sc)
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT key, short_description, stored_by, updated_at, version, size,
		$3 = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $3)
		FROM (SELECT 1) AS one LEFT JOIN entries ON scope = $1 AND owner = $2 ORDER BY key`, string(sc.Kind), own, task)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := []workspace.ManifestItem{}
	for rows.Next() {
		var (
			key, desc, by *string
			at            *string
			v             *int
			size          *int64
			taskOK        bool
		)
		if err := rows.Scan(&key, &desc, &by, &at, &v, &size, &taskOK); err != nil {
			return nil, err
		}
		if !taskOK {
			return nil, notFoundTask(task)
		}
		if key == nil {
			continue // the row of the left join when the scope is empty
		}
		items = append(items, workspace.ManifestItem{Key: *key, ShortDescription: *desc, StoredBy: *by, UpdatedAt: parseTS(*at), Version: *v, Size: *size})
	}
	return items, rows.Err()
}

// UpdateEntry changes an existing entry; ErrNotFound when missing,
// ErrConflict when IfVersion no longer matches.
func (s *Store) UpdateEntry(ctx context.Context, sc workspace.Scope, req workspace.UpdateRequest) (workspace.Result, error) {
	own, task, err := owner(sc)
	if err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateKey(req.Key); err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateID("agent", req.Agent); err != nil {
		return workspace.Result{}, err
	}
	if req.Description != nil {
		if err := workspace.ValidateDescription(*req.Description); err != nil {
			return workspace.Result{}, err
		}
	}
	var warns []string
	if req.Value != nil {
		if warns, err = s.checkValue(req.Value); err != nil {
			return workspace.Result{}, err
		}
	} else if req.Description == nil {
		return workspace.Result{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "update " + req.Key, Msg: "nothing to update",
			Hint: "give a new description, a new value or both"}
	}
	op := fmt.Sprintf("update %s %q", label(sc), req.Key)
	t := now()
	var e workspace.Entry
	err = s.write(ctx, func(tx wtx) error {
		if err := requireOwner(ctx, tx, task); err != nil {
			return err
		}
		var value, created string
		err := tx.QueryRowContext(ctx, `SELECT key, short_description, created_at, version, value FROM entries
			WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, req.Key).
			Scan(&e.Key, &e.ShortDescription, &created, &e.Version, &value)
		if errors.Is(err, sql.ErrNoRows) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: "no such key", Hint: "create it first with store"}
		}
		if err != nil {
			return err
		}
		if req.IfVersion > 0 && e.Version != req.IfVersion {
			return &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: fmt.Sprintf("version is %d, not %d", e.Version, req.IfVersion),
				Hint: "read it again (get) and retry with the current version"}
		}
		e.Value = json.RawMessage(value)
		if req.Description != nil {
			e.ShortDescription = *req.Description
		}
		if req.Value != nil {
			e.Value = req.Value
		}
		e.StoredBy, e.UpdatedAt, e.CreatedAt = req.Agent, t, parseTS(created)
		e.Version++
		if _, err := tx.ExecContext(ctx, `UPDATE entries SET short_description = $4, stored_by = $5, updated_at = $6, version = $7, size = $8, value = $9
			WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, req.Key,
			e.ShortDescription, e.StoredBy, ts(t), e.Version, len(e.Value), string(e.Value)); err != nil {
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
	own, task, err := owner(sc)
	if err != nil {
		return err
	}
	if err := workspace.ValidateKey(key); err != nil {
		return err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return err
	}
	return s.write(ctx, func(tx wtx) error {
		if err := requireOwner(ctx, tx, task); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM entries WHERE scope = $1 AND owner = $2 AND key = $3", string(sc.Kind), own, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: fmt.Sprintf("delete %s %q", label(sc), key), Msg: "no such key",
				Hint: "list the keys of the scope"}
		}
		return s.entryEvent(ctx, tx, sc, "deleted", key, agent, 0, now())
	})
}
