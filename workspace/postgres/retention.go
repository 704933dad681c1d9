package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Retention is the one SQL store's (sqlstore.Store.Prune); the driver
// takes the locks, reads them, and sends a task's pruning in one batch.

// TryLock takes an advisory lock without waiting (sqlstore.Driver).
func (d driver) TryLock(ctx context.Context, name, taskID, lock, agent string) (func(), error) {
	lk, err := d.s.lock(ctx, name, taskID, lock, agent, 0)
	if err != nil {
		return nil, err
	}
	return func() { lk.Release() }, nil
}

// Held says whether a lock is held now, and by whom.
func (d driver) Held(ctx context.Context, name string) (bool, *locking.Holder, error) {
	return d.s.held(ctx, name)
}

// Batch runs stmts in tx in one round trip.
func (d driver) Batch(ctx context.Context, ex sqlstore.Executor, stmts []string, args ...any) error {
	b := &pgx.Batch{}
	for _, q := range stmts {
		b.Queue(q, args...)
	}
	return txOfExec(ex).SendBatch(ctx, b).Close()
}
