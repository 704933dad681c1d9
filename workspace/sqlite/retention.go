package sqlite

import (
	"context"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Retention is the one SQL store's (sqlstore.Store.Prune); the driver
// takes the locks (flocks) and reads them.

// TryLock takes a lock without waiting (sqlstore.Driver).
func (d sqlDriver) TryLock(ctx context.Context, name, taskID, lock, agent string) (func(), error) {
	lk, err := d.s.lock(ctx, name, taskID, lock, agent, 0)
	if err != nil {
		return nil, err
	}
	return func() { lk.Release() }, nil
}

// Held says whether a lock is held now, and by whom.
func (d sqlDriver) Held(_ context.Context, name string) (bool, *locking.Holder, error) {
	return d.s.held(name)
}

// Batch runs stmts in tx, one after another.
func (d sqlDriver) Batch(ctx context.Context, ex sqlstore.Executor, stmts []string, args ...any) error {
	for _, q := range stmts {
		if _, err := ex.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}
