package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The friction log is one document, friction/friction.json byte for byte,
// in its row of the files table. friction.Log does all the work it does
// on files; frictionRow only reads the row and runs each change as a
// read-modify-write in one BEGIN IMMEDIATE transaction, so no writer's
// change is lost to another's.

// Friction returns the workspace's friction log; agent names the writer.
func (s *Store) Friction(ctx context.Context, agent string) workspace.FrictionLog {
	return &friction.Log{Storage: frictionRow{s}, Agent: agent, Timeout: time.Duration(s.Settings().LockTimeout), Now: now}
}

// FrictionConfig is the detectors' configuration from workspace.json.
func (s *Store) FrictionConfig(ctx context.Context) friction.Config {
	return s.Settings().Friction.Config()
}

// NoteFriction appends `friction_recorded <task> <friction_id> type=T
// occurrences=N new=true|false` to each of tasks that exists; it is best
// effort, as on files.
func (s *Store) NoteFriction(ctx context.Context, e friction.Entry, isNew bool, tasks []string) {
	for _, ev := range sqlstore.FrictionEvents(e, isNew, tasks) {
		_ = s.AppendEvent(ctx, ev)
	}
}

// frictionPath is the log's row in files, its path in the tree.
const frictionPath = friction.File

// frictionRow is the friction.Storage of a Store.
type frictionRow struct{ s *Store }

// Name names the log's row in messages.
func (frictionRow) Name() string { return sqlstore.FrictionRowName }

func (r frictionRow) Read(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var doc string
	err := r.s.rdb.QueryRowContext(ctx, "SELECT body FROM files WHERE path = $1", frictionPath).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the friction log: %w", err)
	}
	return []byte(doc), nil
}

// Update runs change in one write transaction, waiting for the write
// lock at most timeout; if change writes nothing, nothing is written.
func (r frictionRow) Update(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error {
	wctx, cancel := context.WithTimeout(ctx, max(timeout, time.Millisecond))
	defer cancel()
	err := r.s.write(wctx, func(tx wtx) error {
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
		return readErr("update the friction log", err)
	}
	return nil
}
