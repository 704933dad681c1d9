package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// FrictionRowName names the friction log's row in files (by its path in
// the tree, friction.File) in messages.
const FrictionRowName = "friction log (files row " + friction.File + ")"

// The friction log is one document, friction/friction.json byte for
// byte, in its row of the files table (by that path, as an export writes
// it). friction.Log does all the work it does on files (checking,
// merging, the detectors' tally, the canonical encoding); frictionRow
// only reads the row and has the driver run each change as a
// read-modify-write no other writer interleaves with
// (Driver.UpdateFriction), so no writer's change is lost to another's.

// FrictionDoc is the friction log's row.
func (s *Store) FrictionDoc() workspace.FrictionDoc { return frictionRow{s} }

// NoteFriction appends ev to the events of each of tasks that exists;
// tasks that do not (removed, anonymised) are skipped. It is best effort,
// as on files: the entry is recorded whether or not its events are.
func (s *Store) NoteFriction(ctx context.Context, ev workspace.Event, tasks []string) {
	for _, t := range tasks {
		if workspace.ValidateID("task id", t) == nil {
			ev.TaskID = t
			_ = s.AppendEvent(ctx, ev)
		}
	}
}

// frictionRow is the workspace.FrictionDoc of a Store.
type frictionRow struct{ s *Store }

// Name names the log's row in messages.
func (frictionRow) Name() string { return FrictionRowName }

func (r frictionRow) Read(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var doc string
	err := r.s.r.QueryRow(ctx, "SELECT body FROM files WHERE path = $1", friction.File).Scan(&doc)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the friction log: %w", err)
	}
	return []byte(doc), nil
}

// Update runs change through the driver (Driver.UpdateFriction).
func (r frictionRow) Update(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error {
	return r.s.d.UpdateFriction(ctx, agent, timeout, change)
}
