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

// FrictionEvents are the friction_recorded events that note entry e
// (recorded, or merged when isNew is false) in tasks, one a task; an id
// that is not a task's is left out.
func FrictionEvents(e friction.Entry, isNew bool, tasks []string) []workspace.Event {
	var out []workspace.Event
	for _, t := range tasks {
		if workspace.ValidateID("task id", t) == nil {
			out = append(out, workspace.FrictionRecorded(e, isNew, t))
		}
	}
	return out
}

// The friction log is one document, friction/friction.json byte for
// byte, in its row of the files table (by that path, as an export writes
// it). friction.Log does all the work it does on files (checking,
// merging, the detectors' tally, the canonical encoding); frictionRow
// only reads the row and has the driver run each change as a
// read-modify-write no other writer interleaves with
// (Driver.UpdateFriction), so no writer's change is lost to another's.

// Friction returns the workspace's friction log; agent names the writer
// to a waiter that gives up.
func (s *Store) Friction(ctx context.Context, agent string) workspace.FrictionLog {
	return &friction.Log{Storage: frictionRow{s}, Agent: agent, Timeout: time.Duration(s.settings.LockTimeout), Now: Now}
}

// FrictionConfig is the detectors' configuration from workspace.json.
func (s *Store) FrictionConfig(ctx context.Context) friction.Config {
	return s.settings.Friction.Config()
}

// NoteFriction appends `friction_recorded <task> <friction_id> type=T
// occurrences=N new=true|false` to each of tasks that exists; tasks that
// do not (removed, anonymised) are skipped. It is best effort, as on
// files: the entry is recorded whether or not its events are.
func (s *Store) NoteFriction(ctx context.Context, e friction.Entry, isNew bool, tasks []string) {
	for _, ev := range FrictionEvents(e, isNew, tasks) {
		_ = s.AppendEvent(ctx, ev)
	}
}

// frictionRow is the friction.Storage of a Store.
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
