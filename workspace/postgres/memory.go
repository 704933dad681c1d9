package postgres

import (
	"context"
	"errors"
	"fmt"
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
// compare-and-set. The event is placed by the row's event_xid (migration
// 0012): after every earlier put of the item. Its last two arguments are
// its grant guard (guardAt).
var (
	memoryUpsert = `WITH up AS (INSERT INTO memory_items AS m (ns_key, key, namespace, version, created_at, updated_at, expires_at, stored_by, value)
			SELECT $1::text, $2::text, $3::text, 1, $4::timestamptz, $4::timestamptz, $5::timestamptz, $6::text, $7::text
			WHERE ` + guardAt(11) + `
			ON CONFLICT (ns_key, key) DO UPDATE SET
				version = CASE WHEN m.expires_at IS NULL OR m.expires_at > $4 THEN m.version + 1 ELSE 1 END,
				created_at = CASE WHEN m.expires_at IS NULL OR m.expires_at > $4 THEN m.created_at ELSE excluded.created_at END,
				updated_at = excluded.updated_at, expires_at = excluded.expires_at, stored_by = excluded.stored_by,
				value = excluded.value
			WHERE NOT $8 OR m.expires_at <= $4
			RETURNING created_at, version, event_xid),
		ev AS (INSERT INTO memory_events (time, line, xid) SELECT $4, $9::text || up.version || $10::text, up.event_xid FROM up)
		SELECT created_at, version FROM up`
	memoryUpdate = `WITH up AS (UPDATE memory_items SET version = version + 1, updated_at = $3, expires_at = $4, stored_by = $5, value = $6
			WHERE ns_key = $1 AND key = $2 AND version = $7 AND (expires_at IS NULL OR expires_at > $3) AND ` + guardAt(10) + `
			RETURNING created_at, version, event_xid),
		ev AS (INSERT INTO memory_events (time, line, xid) SELECT $3, $8::text || up.version || $9::text, up.event_xid FROM up)
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
	if err != nil && p.Guard.SHA256 != "" {
		err = guarded(err)
	}
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
	sum, doc := guardArgs(p.Guard)
	if req.IfVersion > 0 {
		return memoryUpdate, []any{p.NSKey, req.Key, p.At, p.Expires(), req.Agent, string(p.Value), req.IfVersion, head, tail, sum, doc}
	}
	return memoryUpsert, []any{p.NSKey, req.Key, req.Namespace.String(), p.At, p.Expires(), req.Agent, string(p.Value), req.IfAbsent, head, tail, sum, doc}
}

// A grant guard (workspace.GrantGuard) is checked in the statement that
// writes or reads: the condition (guardAt) holds when the statement is
// given no guard (its two arguments NULL), or when the token's row of
// that hash holds that doc in the statement's snapshot; when it does
// not, the statement fails with division_by_zero (1 / a count of no
// rows), which guarded reads as workspace.ErrGrantChanged. Failing the
// statement, rather than writing nothing, tells a guard that failed from
// a compare-and-set that refused, and rolls back the puts a batch's
// statements made before it (they are one transaction). The condition
// names no row of the statement's table, so PostgreSQL checks it once,
// before reading any row: a get of an item that is not there fails too.
// Without a guard the division is never made (PostgreSQL may evaluate
// the subquery even where an OR would not need it: a concurrent update's
// recheck does).
//
// guardAt is the condition over the hash $n and the doc $n+1.
func guardAt(n int) string {
	return fmt.Sprintf(`(SELECT CASE WHEN $%[1]d::text IS NULL THEN 1 ELSE 1 / count(*) END FROM tokens WHERE sha256 = $%[1]d AND doc = $%[2]d::text) = 1`, n, n+1)
}

// getGuard is a get's guard: its hash and doc follow the item's three
// arguments.
var getGuard = guardAt(3)

// guardArgs are the arguments of a guard's condition for g: NULLs for none.
func guardArgs(g workspace.GrantGuard) (sum, doc any) {
	if g.SHA256 == "" {
		return nil, nil
	}
	return g.SHA256, g.Doc
}

// guarded is err of a guarded statement: workspace.ErrGrantChanged when
// its guard failed it.
func guarded(err error) error {
	if pgCode(err) == "22012" {
		return fmt.Errorf("%w (%s)", workspace.ErrGrantChanged, err.Error())
	}
	return err
}

// GuardsGrant reports whether op checks a grant guard in its statement
// (workspace.GrantGuarding): the memory item's get, put and batch do.
func (s *Store) GuardsGrant(op string) bool {
	switch op {
	case workspace.GuardedMemoryGet, workspace.GuardedMemoryPut, workspace.GuardedMemoryBatch:
		return true
	}
	return false
}

var _ workspace.GrantGuarding = (*Store)(nil)

// GetMemory reads one live item (workspace.MemoryStore); with a grant
// guard in ctx, the item's SELECT checks it.
func (s *Store) GetMemory(ctx context.Context, ns workspace.Namespace, key string) (workspace.MemoryItem, error) {
	g, ok := workspace.GrantGuardOf(ctx)
	if !ok {
		return s.Store.GetMemory(ctx, ns, key)
	}
	it, err := s.Store.GetMemoryWhere(ctx, ns, key, getGuard, g.SHA256, g.Doc)
	if err != nil {
		return it, guarded(err)
	}
	return it, nil
}
