package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The friction log is the one SQL store's (sqlstore); a change runs here
// as a read-modify-write in one BEGIN IMMEDIATE transaction, so no
// writer's change is lost to another's.

// frictionPath is the log's row in files, its path in the tree.
const frictionPath = friction.File

// UpdateFriction runs change in one write transaction, waiting for the write
// lock at most timeout; if change writes nothing, nothing is written.
func (d sqlDriver) UpdateFriction(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error {
	wctx, cancel := context.WithTimeout(ctx, max(timeout, time.Millisecond))
	defer cancel()
	err := d.s.write(wctx, func(tx wtx) error {
		var doc string
		err := tx.QueryRowContext(ctx, "SELECT body FROM files WHERE path = $1", frictionPath).Scan(&doc)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var old []byte
		if doc != "" {
			old = []byte(doc)
		}
		data, err := change(old)
		if err != nil || data == nil {
			return err
		}
		_, err = tx.ExecContext(ctx, putFileSQL, frictionPath, string(data), ts(now()))
		return err
	})
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return &locking.TimeoutError{Path: "friction log", Waited: timeout}
	}
	if err != nil {
		return sqlstore.ReadErr("update the friction log", err)
	}
	return nil
}
