package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Entries of the four scopes are rows of entries, keyed by scope, owner
// and key; each write is one transaction (on PostgreSQL, the row lock of
// its key orders concurrent writers: no lost update). The event of a
// write in the thread and session scopes is made by the database, a
// trigger on entries (PostgreSQL migration 0009, SQLite 0005), so an
// agent's own SQL write makes it too, and a write of the store tells the
// trigger only what the row cannot (Dialect.EntryIntent: a put's update
// is a store, who deletes). Keys, values and descriptions are checked as
// on files, and always sent as parameters. Storing an entry's row is
// each driver's own (Driver.PutEntry): it is the hot write, one
// statement on PostgreSQL.

// EntryPut is one entry to store (Driver.PutEntry): the request, checked,
// in scope Scope under Owner, at At; Task is the task the scope belongs
// to ("" for the agent and global scopes), which must exist.
type EntryPut struct {
	Scope       workspace.Scope
	Owner, Task string
	Req         workspace.StoreRequest
	At          time.Time
}

// StoreEntry creates or replaces an entry: created_at is kept on replace
// and version bumped, with the entry's event, in one write.
func (s *Store) StoreEntry(ctx context.Context, sc workspace.Scope, req workspace.StoreRequest) (workspace.Result, error) {
	own, task, warns, err := CheckStore(sc, req, s.settings.Limits)
	if err != nil {
		return workspace.Result{}, err
	}
	t := Now()
	if req.IfAbsent {
		return s.createEntry(ctx, sc, own, task, req, warns, t)
	}
	created, version, err := s.d.PutEntry(ctx, EntryPut{Scope: sc, Owner: own, Task: task, Req: req, At: t})
	if err != nil {
		return workspace.Result{}, ReadErr(fmt.Sprintf("store %s %q", Label(sc), req.Key), err)
	}
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, CreatedAt: created.UTC(),
		UpdatedAt: t, Version: version, Value: req.Value}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// createEntry stores an entry that must not exist yet (IfAbsent): the
// insert takes the key (its trigger the event) or changes nothing.
func (s *Store) createEntry(ctx context.Context, sc workspace.Scope, own, task string, req workspace.StoreRequest, warns []string, t time.Time) (workspace.Result, error) {
	err := s.d.Write(ctx, func(tx Executor) error {
		if err := RequireOwner(ctx, tx, task); err != nil {
			return err
		}
		if err := s.Intent(ctx, tx, sc, "", ""); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ($1, $2, $3, $4, $5, $6, $6, 1, $7, $8) ON CONFLICT (scope, owner, key) DO NOTHING`,
			string(sc.Kind), own, req.Key, req.Description, req.Agent, s.dl.Time(t), len(req.Value), string(req.Value))
		if err != nil {
			return err
		}
		if n == 0 {
			var v int
			_ = tx.QueryRow(ctx, "SELECT version FROM entries WHERE scope = $1 AND owner = $2 AND key = $3", string(sc.Kind), own, req.Key).Scan(&v)
			return &workspace.Error{Kind: workspace.ErrConflict, Op: fmt.Sprintf("create %s %q", Label(sc), req.Key),
				Msg: fmt.Sprintf("the key exists (version %d)", v), Hint: "read it (get), or store it without create-only to replace it"}
		}
		return nil
	})
	if err != nil {
		return workspace.Result{}, err
	}
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, CreatedAt: t, UpdatedAt: t, Version: 1, Value: req.Value}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// ReadErr is err as it is when it is the store's own (a
// *workspace.Error), else with op.
func ReadErr(op string, err error) error {
	var we *workspace.Error
	if errors.As(err, &we) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// RequireOwner fails with ErrNotFound when task (not "") does not exist.
func RequireOwner(ctx context.Context, tx Executor, task string) error {
	if task == "" {
		return nil
	}
	return RequireTask(ctx, tx, task)
}

// Intent tells the entries' trigger, in tx, what the next write of an
// entry of sc cannot say itself: the verb ("" for the trigger's own,
// "stored" for an upsert), who deletes, and the token of ctx. Nothing is
// said where there is nothing to say: in a scope without events (an
// intent no trigger takes would stay for the next write on SQLite), or
// for an insert or update without a token.
func (s *Store) Intent(ctx context.Context, tx Executor, sc workspace.Scope, verb, deleter string) error {
	token := workspace.TokenOf(ctx)
	if !MakesEvents(sc) || verb == "" && deleter == "" && token == "" {
		return nil
	}
	_, err := tx.Exec(ctx, s.dl.EntryIntent, verb, deleter, token)
	return err
}

// GetEntry reads one entry; a missing key is ErrNotFound.
func (s *Store) GetEntry(ctx context.Context, sc workspace.Scope, key string) (workspace.Entry, error) {
	own, _, err := CheckGet(sc, key)
	if err != nil {
		return workspace.Entry{}, err
	}
	var e workspace.Entry
	var value string
	err = s.r.QueryRow(ctx, `SELECT key, short_description, stored_by, created_at, updated_at, version, value
		FROM entries WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, key).
		Scan(&e.Key, &e.ShortDescription, &e.StoredBy, s.dl.ScanTime(&e.CreatedAt), s.dl.ScanTime(&e.UpdatedAt), &e.Version, &value)
	if errors.Is(err, ErrNoRows) {
		return e, NoSuchKey("get", sc, key)
	}
	if err != nil {
		return e, err
	}
	e.CreatedAt, e.UpdatedAt, e.Value = e.CreatedAt.UTC(), e.UpdatedAt.UTC(), json.RawMessage(value)
	return e, nil
}

// ListEntries lists a scope by key, without reading a value.
func (s *Store) ListEntries(ctx context.Context, sc workspace.Scope) ([]workspace.ManifestItem, error) {
	own, task, err := Owner(sc)
	if err != nil {
		return nil, err
	}
	// One read: the task's existence, and the rows (none is one row of
	// NULLs, from the left join).
	rows, err := s.r.Query(ctx, `SELECT key, short_description, stored_by, updated_at, version, size,
		$3 = '' OR EXISTS (SELECT 1 FROM tasks WHERE id = $3)
		FROM (SELECT 1) AS one LEFT JOIN entries ON scope = $1 AND owner = $2 ORDER BY key`+s.dl.Collate, string(sc.Kind), own, task)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := []workspace.ManifestItem{}
	for rows.Next() {
		var (
			key, desc, by *string
			at            time.Time
			v             *int
			size          *int64
			taskOK        bool
		)
		if err := rows.Scan(&key, &desc, &by, s.dl.ScanNullTime(&at), &v, &size, &taskOK); err != nil {
			return nil, err
		}
		if !taskOK {
			return nil, NotFoundTask(task)
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
	own, task, warns, err := CheckUpdate(sc, req, s.settings.Limits)
	if err != nil {
		return workspace.Result{}, err
	}
	op := UpdateOp(sc, req.Key)
	t := Now()
	var e workspace.Entry
	err = s.d.Write(ctx, func(tx Executor) error {
		if err := RequireOwner(ctx, tx, task); err != nil {
			return err
		}
		var value string
		err := tx.QueryRow(ctx, `SELECT key, short_description, created_at, version, value FROM entries
			WHERE scope = $1 AND owner = $2 AND key = $3`+s.dl.Lock("UPDATE"), string(sc.Kind), own, req.Key).
			Scan(&e.Key, &e.ShortDescription, s.dl.ScanTime(&e.CreatedAt), &e.Version, &value)
		if errors.Is(err, ErrNoRows) {
			return NoKeyToUpdate(op)
		}
		if err != nil {
			return err
		}
		e.Value, e.CreatedAt = json.RawMessage(value), e.CreatedAt.UTC()
		if err := ApplyUpdate(&e, req, op, t); err != nil {
			return err
		}
		if err := s.Intent(ctx, tx, sc, "", ""); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE entries SET short_description = $4, stored_by = $5, updated_at = $6, version = $7, size = $8, value = $9
			WHERE scope = $1 AND owner = $2 AND key = $3`, string(sc.Kind), own, req.Key,
			e.ShortDescription, e.StoredBy, s.dl.Time(t), e.Version, len(e.Value), string(e.Value))
		return err
	})
	if err != nil {
		return workspace.Result{}, err
	}
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// DeleteEntry removes a key; a missing key is ErrNotFound, a stale
// IfVersion ErrConflict.
func (s *Store) DeleteEntry(ctx context.Context, sc workspace.Scope, req workspace.DeleteRequest) error {
	key, agent := req.Key, req.Agent
	own, task, err := CheckDelete(sc, key, agent)
	if err != nil {
		return err
	}
	return s.d.Write(ctx, func(tx Executor) error {
		if err := RequireOwner(ctx, tx, task); err != nil {
			return err
		}
		// The trigger names who deletes from here.
		if err := s.Intent(ctx, tx, sc, "", agent); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, "DELETE FROM entries WHERE scope = $1 AND owner = $2 AND key = $3 AND ($4 = 0 OR version = $4)", string(sc.Kind), own, key, req.IfVersion)
		if err != nil {
			return err
		}
		if n == 0 && req.IfVersion > 0 {
			var v int
			err := tx.QueryRow(ctx, "SELECT version FROM entries WHERE scope = $1 AND owner = $2 AND key = $3", string(sc.Kind), own, key).Scan(&v)
			if err == nil {
				return &workspace.Error{Kind: workspace.ErrConflict, Op: fmt.Sprintf("delete %s %q", Label(sc), key),
					Msg: fmt.Sprintf("version is %d, not %d", v, req.IfVersion), Hint: "read it again (get) and decide from what it holds now"}
			}
		}
		if n == 0 {
			return NoSuchKey("delete", sc, key)
		}
		return nil
	})
}
