package daemon

import (
	"fmt"
	"slices"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// A state.json is mostly the entries of its subtasks, checkpoints and
// workers, and a burst changes few of them: only the entries that changed
// need the schema check before a state is written (see checkNext).

// stateDelta is the entries of next that differ from prev (a nil value
// always counts as changed), by map.
type stateDelta struct {
	subtasks    map[string]*workspace.SubtaskState
	checkpoints map[string]*workspace.CheckpointState
	workers     map[string]*workspace.WorkerState
}

func diffState(prev, next workspace.State) stateDelta {
	return stateDelta{
		subtasks:    changed(prev.Subtasks, next.Subtasks, subtaskEqual),
		checkpoints: changed(prev.Checkpoints, next.Checkpoints, checkpointEqual),
		workers:     changed(prev.Workers, next.Workers, workerEqual),
	}
}

// changed is the entries of next that are not in prev with an equal value
// (a nil value always counts as changed).
func changed[V any](prev, next map[string]*V, equal func(a, b *V) bool) map[string]*V {
	out := make(map[string]*V)
	for k, v := range next {
		if p, ok := prev[k]; !ok || v == nil || p == nil || !equal(p, v) {
			out[k] = v
		}
	}
	return out
}

// The entry equalities diffState uses, field by field: a state of
// hundreds of subtasks is compared on every state write, and reflection
// made that the largest part of the diff. They may call two entries that
// encode alike different (times in different locations), never the
// reverse; TestEntryEqual holds each to every field of its type.

func subtaskEqual(a, b *workspace.SubtaskState) bool {
	return a.Status == b.Status && a.Worker == b.Worker && slices.Equal(a.BlockedBy, b.BlockedBy) &&
		(a.BlockedBy == nil) == (b.BlockedBy == nil) && a.Attempts == b.Attempts &&
		timeEqual(a.StartedAt, b.StartedAt) && timeEqual(a.CompletedAt, b.CompletedAt) &&
		a.Output == b.Output && a.Error == b.Error
}

func checkpointEqual(a, b *workspace.CheckpointState) bool {
	return a.Status == b.Status && timeEqual(a.ReachedAt, b.ReachedAt) &&
		timeEqual(a.ReviewedAt, b.ReviewedAt) && a.Review == b.Review
}

func workerEqual(a, b *workspace.WorkerState) bool { return *a == *b }

func timeEqual(a, b *time.Time) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// checkNext checks next against the state schema before it is written:
// it starts the check and returns the function that finishes it, given
// next encoded. When the state next was derived from is known valid
// (prevValid) only what changed (delta) is validated, beside the encoding:
// the schema puts no constraint across the entries of subtasks,
// checkpoints and workers, so the entries equal to the previous state's
// are valid already, and the document is checked with the others left
// out. The size limit still applies to it whole; the depth limit need
// not be checked again, as every entry sits at the same depth in the
// part as in the whole and was checked there once. A burst on a task
// with hundreds of subtasks so costs what it changes, not the size of
// the state.
func checkNext(prevValid bool, next workspace.State, delta stateDelta) func(data []byte) error {
	if !prevValid {
		return func(data []byte) error { return schemas.Validate(schemas.KindState, data) }
	}
	part := next
	part.Subtasks, part.Checkpoints, part.Workers = delta.subtasks, delta.checkpoints, delta.workers
	checked := make(chan error, 1) // never blocks: the result may go unread
	go func() {
		pdata, err := atomicfile.Marshal(part)
		if err == nil {
			err = schemas.Validate(schemas.KindState, pdata)
		}
		checked <- err
	}()
	return func(data []byte) error {
		if err := <-checked; err != nil {
			return err
		}
		if len(data) > schemas.MaxBytes {
			return fmt.Errorf("%s: %w: %d bytes, limit %d", schemas.KindState, schemas.ErrTooLarge, len(data), schemas.MaxBytes)
		}
		return nil
	}
}
