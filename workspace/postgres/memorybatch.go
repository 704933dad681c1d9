package postgres

import (
	"context"
	"errors"
	"fmt"

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

// PutMemories stores a batch of memory puts (sqlstore.Driver).
func (d driver) PutMemories(ctx context.Context, ps []sqlstore.MemoryPut) ([]sqlstore.MemoryWritten, error) {
	b := &pgx.Batch{}
	for _, p := range ps {
		q, args := memoryStatement(p)
		b.Queue(q, args...)
	}
	out := make([]sqlstore.MemoryWritten, len(ps))
	var refused []int
	br := d.s.pool.SendBatch(ctx, b)
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
