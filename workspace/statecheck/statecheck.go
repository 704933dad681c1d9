// Package statecheck checks a state against the state schema before it
// is written, at the cost of what changed rather than of the whole
// document.
//
// A state is mostly the entries of its subtasks, checkpoints and
// workers, and a commit changes few of them. The schema puts no
// constraint across those entries, so when the state a new one was
// derived from is known valid, the entries equal to its own are valid
// already: only the changed entries need the check, with the rest of the
// document. The size limit still applies to the whole; the depth limit
// need not be checked again, as every entry sits at the same depth in the
// part as in the whole and was checked there once. A commit on a task of
// hundreds of subtasks so costs what it changes, not the size of the
// state. The file daemon's state writes follow the same rule.
package statecheck

import (
	"fmt"
	"slices"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// Delta is the entries of a state that differ from its predecessor's (a
// nil value always counts as changed), by map.
type Delta struct {
	Subtasks    map[string]*workspace.SubtaskState
	Checkpoints map[string]*workspace.CheckpointState
	Workers     map[string]*workspace.WorkerState
}

// Diff is the entries of next that are not in prev with an equal value.
func Diff(prev, next workspace.State) Delta {
	return Delta{
		Subtasks:    changed(prev.Subtasks, next.Subtasks, subtaskEqual),
		Checkpoints: changed(prev.Checkpoints, next.Checkpoints, checkpointEqual),
		Workers:     changed(prev.Workers, next.Workers, workerEqual),
	}
}

func changed[V any](prev, next map[string]*V, equal func(a, b *V) bool) map[string]*V {
	out := make(map[string]*V)
	for k, v := range next {
		if p, ok := prev[k]; !ok || v == nil || p == nil || !equal(p, v) {
			out[k] = v
		}
	}
	return out
}

// The entry equalities Diff uses, field by field: a state of hundreds of
// subtasks is compared on every state write, and reflection would make
// that the largest part of the check. They may call two entries that
// encode alike different (times in different locations), never the
// reverse; the tests hold each to every field of its type.

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

// Next checks data, next encoded, against the state schema. When prev is
// nil (the state next was derived from is not known valid) the whole
// document is checked; else only what changed from *prev, beside the
// size of the whole.
func Next(prev *workspace.State, next workspace.State, data []byte) error {
	if prev == nil {
		return schemas.Validate(schemas.KindState, data)
	}
	d := Diff(*prev, next)
	part := next
	part.Subtasks, part.Checkpoints, part.Workers = d.Subtasks, d.Checkpoints, d.Workers
	return checkPart(part, len(data))
}

// checkPart checks part, a state holding only the entries of another that
// changed, against the schema, and size, the length of that other state
// encoded, against the size limit.
func checkPart(part workspace.State, size int) error {
	pdata, err := atomicfile.Marshal(part)
	if err != nil {
		return err
	}
	if err := schemas.Validate(schemas.KindState, pdata); err != nil {
		return err
	}
	if size > schemas.MaxBytes {
		return fmt.Errorf("%s: %w: %d bytes, limit %d", schemas.KindState, schemas.ErrTooLarge, size, schemas.MaxBytes)
	}
	return nil
}
