package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A batch of memory puts is the puts' statements (memoryStatement) sent
// as one pgx.Batch: one round trip, which PostgreSQL runs as one implicit
// transaction (the pipeline ends in one Sync and holds no BEGIN), so one
// commit, and a statement that fails rolls back every one before it.
// Each statement sees the ones before it, so two puts of one item make
// two versions. A put whose statement returns no row was refused by its
// compare-and-set; the versions of the refused items are read after, in
// one query.

//
// Two batches that put the same items in other orders would each hold a
// row the other waits for (a deadlock PostgreSQL breaks by failing one):
// a batch of two items or more first takes a transaction lock of each of
// its items (an advisory lock of a hash of the item), all in one order,
// the hashes' (itemLocks). Of two batches that share an item, one then
// holds every lock of the other's items it shares before either locks a
// row; a single put locks one row and waits for nothing while it holds
// it.

// PutMemories stores a batch of memory puts (sqlstore.Driver); the
// puts of one batch come with one grant guard, which each statement
// checks: one that fails rolls back the batch.
func (d driver) PutMemories(ctx context.Context, ps []sqlstore.MemoryPut) ([]sqlstore.MemoryWritten, error) {
	ws, err := d.putMemories(ctx, ps)
	if err != nil && len(ps) > 0 && ps[0].Guard.SHA256 != "" {
		err = guarded(err)
	}
	return ws, err
}

func (d driver) putMemories(ctx context.Context, ps []sqlstore.MemoryPut) ([]sqlstore.MemoryWritten, error) {
	b := &pgx.Batch{}
	locks := d.itemLocks(ps)
	if len(locks) > 1 {
		b.Queue("SELECT pg_advisory_xact_lock($1::int4, k) FROM unnest($2::int4[]) AS k", d.itemLockClass(), locks)
	}
	rows, plain := memoryRowsOf(ps)
	if plain {
		q, args := rows.statement()
		b.Queue(q, args...)
	} else {
		for _, p := range ps {
			q, args := memoryStatement(p)
			b.Queue(q, args...)
		}
	}
	out := make([]sqlstore.MemoryWritten, len(ps))
	var refused []int
	br := d.s.pool.SendBatch(ctx, b)
	if len(locks) > 1 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("lock the batch's items: %w", err)
		}
	}
	if plain {
		err := rows.read(br, out)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	for i := range ps {
		err := br.QueryRow().Scan(&out[i].Created, &out[i].Version)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = append(refused, i)
			continue
		}
		if err != nil {
			_ = br.Close()
			return nil, workspace.AtPut(i, err)
		}
	}
	// The commit is the batch's end: only a Close without error says
	// the rows read above are written.
	if err := br.Close(); err != nil {
		return nil, err
	}
	if len(refused) == 0 {
		return out, nil
	}
	return out, d.refusedVersions(ctx, ps, out, refused)
}

// refusedVersions gives each refused put its conflict with the version
// the item had when the put ran: the version read now less the puts of
// the item the batch wrote after it (each wrote one version more).
func (d driver) refusedVersions(ctx context.Context, ps []sqlstore.MemoryPut, out []sqlstore.MemoryWritten, refused []int) error {
	nks, keys := make([]string, len(refused)), make([]string, len(refused))
	for j, i := range refused {
		nks[j], keys[j] = ps[i].NSKey, ps[i].Req.Key
	}
	rows, err := d.s.pool.Query(ctx, `SELECT m.ns_key, m.key, m.version FROM memory_items m
		JOIN unnest($1::text[], $2::text[]) AS r(ns_key, key) ON m.ns_key = r.ns_key AND m.key = r.key
		WHERE m.expires_at IS NULL OR m.expires_at > $3`, nks, keys, ps[0].At)
	if err != nil {
		return fmt.Errorf("read the refused items' versions: %w", err)
	}
	type item struct{ nk, key string }
	now := map[item]int{}
	var it item
	var v int
	_, err = pgx.ForEachRow(rows, []any{&it.nk, &it.key, &v}, func() error {
		now[it] = v
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the refused items' versions: %w", err)
	}
	for _, i := range refused {
		p := ps[i]
		cur := now[item{p.NSKey, p.Req.Key}]
		for j := i + 1; j < len(ps); j++ {
			if out[j].Version > 0 && ps[j].NSKey == p.NSKey && ps[j].Req.Key == p.Req.Key && cur > 0 {
				cur--
			}
		}
		out[i].Err = workspace.PutConflict("put", p.Req.Namespace, p.Req.Key, cur)
	}
	return nil
}

// itemLockClass is the first key of the items' advisory locks: this
// schema's memory items, so that the workspaces of other schemas lock
// others (the two-key locks are a space apart from the named locks'
// single keys).
func (d driver) itemLockClass() int32 {
	h := fnv.New32a()
	h.Write([]byte("workspaced memory items\x00" + d.s.schema))
	return int32(h.Sum32())
}

// itemLocks is the second keys of the locks of the batch's items: a hash
// of each item, sorted, without repeats. Two items of one hash share a
// lock, which only makes their batches wait for each other.
func (d driver) itemLocks(ps []sqlstore.MemoryPut) []int32 {
	keys := make([]int32, 0, len(ps))
	for _, p := range ps {
		h := fnv.New32a()
		h.Write([]byte(p.NSKey))
		h.Write([]byte{0})
		h.Write([]byte(p.Req.Key))
		keys = append(keys, int32(h.Sum32()))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
