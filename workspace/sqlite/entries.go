package sqlite

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// PutEntry stores an entry's row (sqlstore.Driver) in one write
// transaction that finds the task, tells the entries' trigger that an
// update is a store (migration 0005) and upserts the row, whose trigger
// appends the event.
func (d sqlDriver) PutEntry(ctx context.Context, p sqlstore.EntryPut) (time.Time, int, error) {
	req := &p.Req
	var created string
	var version int
	err := d.s.write(ctx, func(tx wtx) error {
		ex := sqlstore.Executor(tx)
		if err := sqlstore.RequireOwner(ctx, ex, p.Task); err != nil {
			return err
		}
		if err := d.s.Intent(ctx, ex, p.Scope, "stored", ""); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ($1, $2, $3, $4, $5, $6, $6, 1, $7, $8)
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version`,
			string(p.Scope.Kind), p.Owner, req.Key, req.Description, req.Agent, ts(p.At), len(req.Value), string(req.Value)).Scan(&created, &version)
	})
	if err != nil {
		return time.Time{}, 0, err
	}
	return parseTS(created), version, nil
}

// PutMemory stores a memory item's row with its event (sqlstore.Driver)
// in one write transaction, which holds the database: the row is read,
// judged and written (sqlstore.PutMemoryIn).
func (d sqlDriver) PutMemory(ctx context.Context, p sqlstore.MemoryPut) (created time.Time, version int, err error) {
	err = d.Write(ctx, func(tx sqlstore.Executor) error {
		created, version, err = sqlstore.PutMemoryIn(ctx, tx, dialect, p)
		return err
	})
	return created, version, err
}

// PutMemories stores a batch of memory puts (sqlstore.Driver) in one
// write transaction, each put read, judged and written in turn
// (sqlstore.PutMemoryIn); a put its compare-and-set refuses is judged
// before it writes anything, so the transaction goes on with the next.
func (d sqlDriver) PutMemories(ctx context.Context, ps []sqlstore.MemoryPut) ([]sqlstore.MemoryWritten, error) {
	var out []sqlstore.MemoryWritten
	err := d.Write(ctx, func(tx sqlstore.Executor) error {
		out = make([]sqlstore.MemoryWritten, len(ps))
		for i, p := range ps {
			created, version, err := sqlstore.PutMemoryIn(ctx, tx, dialect, p)
			switch {
			case workspace.IsPutConflict(err):
				out[i].Err = err
			case err != nil:
				return workspace.AtPut(i, err)
			default:
				out[i].Created, out[i].Version = created, version
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
