package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A memory put is one statement, so one round trip and one commit: the
// row written as workspace.ApplyPut judges it, where the judging is the
// statement's own conditions on the row it conflicts with or updates
// (which PostgreSQL reads locked and latest, whatever the statement's
// snapshot), and the event inserted from the written row's version.
//
// Without a version to match, an upsert: a live item is replaced with
// its version bumped and created_at kept, an expired one (gone for every
// read) starts again at version 1, and create-only (IfAbsent) leaves a
// live item as it is. With a version (IfVersion), an update of the live
// item at that version. A put that writes nothing was refused by its
// compare-and-set.
const (
	memoryUpsert = `WITH up AS (INSERT INTO memory_items AS m (ns_key, key, namespace, version, created_at, updated_at, expires_at, stored_by, value)
			VALUES ($1, $2, $3, 1, $4, $4, $5, $6, $7)
			ON CONFLICT (ns_key, key) DO UPDATE SET
				version = CASE WHEN m.expires_at IS NULL OR m.expires_at > $4 THEN m.version + 1 ELSE 1 END,
				created_at = CASE WHEN m.expires_at IS NULL OR m.expires_at > $4 THEN m.created_at ELSE excluded.created_at END,
				updated_at = excluded.updated_at, expires_at = excluded.expires_at, stored_by = excluded.stored_by,
				value = excluded.value
			WHERE NOT $8 OR m.expires_at <= $4
			RETURNING created_at, version),
		ev AS (INSERT INTO memory_events (time, line) SELECT $4, $9::text || up.version || $10::text FROM up)
		SELECT created_at, version FROM up`
	memoryUpdate = `WITH up AS (UPDATE memory_items SET version = version + 1, updated_at = $3, expires_at = $4, stored_by = $5, value = $6
			WHERE ns_key = $1 AND key = $2 AND version = $7 AND (expires_at IS NULL OR expires_at > $3)
			RETURNING created_at, version),
		ev AS (INSERT INTO memory_events (time, line) SELECT $3, $8::text || up.version || $9::text FROM up)
		SELECT created_at, version FROM up`
)

// PutMemory stores a memory item's row with its event (sqlstore.Driver)
// in one statement; a put refused by its compare-and-set reads the
// item's current version for the conflict.
func (d driver) PutMemory(ctx context.Context, p sqlstore.MemoryPut) (time.Time, int, error) {
	req := &p.Req
	q, args := memoryStatement(p)
	var created time.Time
	var version int
	err := d.s.pool.QueryRow(ctx, q, args...).Scan(&created, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		var current int
		err = d.s.pool.QueryRow(ctx, `SELECT coalesce((SELECT version FROM memory_items WHERE ns_key = $1 AND key = $2
			AND (expires_at IS NULL OR expires_at > $3)), 0)`, p.NSKey, req.Key, p.At).Scan(&current)
		if err == nil {
			err = workspace.PutConflict("put", req.Namespace, req.Key, current)
		}
	}
	return created, version, err
}

// memoryStatement is the put's statement and its arguments: the upsert,
// or the update of the version it names.
func memoryStatement(p sqlstore.MemoryPut) (string, []any) {
	req := &p.Req
	head, tail := p.EventAround()
	if req.IfVersion > 0 {
		return memoryUpdate, []any{p.NSKey, req.Key, p.At, p.Expires(), req.Agent, string(p.Value), req.IfVersion, head, tail}
	}
	return memoryUpsert, []any{p.NSKey, req.Key, req.Namespace.String(), p.At, p.Expires(), req.Agent, string(p.Value), req.IfAbsent, head, tail}
}
