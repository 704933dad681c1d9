package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// CleanupAgent names cleanup in the lock holder records it leaves and in
// the friction log.
const CleanupAgent = "workspaced-cleanup"

// anonymizeBatch is how many removed task ids are collected before their
// friction entries are anonymised, so memory stays flat however many tasks
// a run removes and a crash loses at most one batch.
const anonymizeBatch = 256

// cleanupRetry is the pause between attempts while another cleanup holds
// the workspace's cleanup lock.
const cleanupRetry = 100 * time.Millisecond

// CleanupRequest is one run of the retention policy.
type CleanupRequest struct {
	Policy retention.Policy
	// DryRun decides and reports, and changes nothing.
	DryRun bool
	// DiscardDecisions keeps no per-task lists in the report (memory
	// flat in the number of tasks); OnProgress still hears each.
	DiscardDecisions bool
	// OnProgress, when set, hears each task's outcome as it is decided.
	OnProgress func(retention.Decision)
	// LockWait is how long to wait while another cleanup (the daemon's,
	// another cron run) holds the cleanup lock.
	LockWait time.Duration
}

// Cleaned is what a cleanup did.
type Cleaned struct {
	retention.Report
	// FrictionAnonymized counts the friction entries changed by
	// anonymising removed task ids; FrictionErrors says what could not
	// be anonymised.
	FrictionAnonymized int
	FrictionErrors     []string
}

// Cleanup applies the retention policy to st's finished tasks (never an
// active one), waiting up to req.LockWait while another cleanup runs, and
// anonymises the friction entries of the tasks it removes, in batches as
// it goes; whatever was removed before a failure still has its friction
// anonymised.
func Cleanup(ctx context.Context, st workspace.Store, req CleanupRequest) (Cleaned, error) {
	a := &anonymizer{ctx: ctx, log: friction.Open(st, CleanupAgent)}
	p := workspace.PruneRequest{
		Policy:           req.Policy,
		DryRun:           req.DryRun,
		Agent:            CleanupAgent,
		DiscardDecisions: req.DiscardDecisions,
		OnProgress: func(d retention.Decision) {
			if req.OnProgress != nil {
				req.OnProgress(d)
			}
			if d.Action == retention.Remove && !req.DryRun {
				a.add(d.TaskID)
			}
		},
	}
	rep, err := prune(ctx, st, p, req.LockWait)
	a.flush()
	return Cleaned{Report: rep, FrictionAnonymized: a.anonymized, FrictionErrors: a.errors}, err
}

// prune runs p, waiting up to timeout while another cleanup holds the
// cleanup lock.
func prune(ctx context.Context, w workspace.Retention, p workspace.PruneRequest, timeout time.Duration) (retention.Report, error) {
	deadline := time.Now().Add(timeout)
	for {
		rep, err := w.Prune(ctx, p)
		if !errors.Is(err, retention.ErrCleanupRunning) || !time.Now().Before(deadline) {
			return rep, err
		}
		t := time.NewTimer(cleanupRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return rep, ctx.Err()
		case <-t.C:
		}
	}
}

// anonymizer anonymises the friction entries of removed tasks in
// batches.
type anonymizer struct {
	ctx        context.Context
	log        *friction.Log
	removed    []string // removed ids not yet anonymised
	anonymized int
	errors     []string
}

func (a *anonymizer) add(id string) {
	a.removed = append(a.removed, id)
	if len(a.removed) >= anonymizeBatch {
		a.flush()
	}
}

// flush anonymises the friction entries of the removed tasks collected so
// far.
func (a *anonymizer) flush() {
	if len(a.removed) == 0 {
		return
	}
	// A cancelled run still anonymises what it removed.
	n, err := a.log.AnonymizeTasks(context.WithoutCancel(a.ctx), a.removed)
	if err != nil {
		a.errors = append(a.errors, fmt.Sprintf("anonymise friction of %d removed task(s): %v", len(a.removed), err))
		// Keep the ids: the next flush tries them again.
		return
	}
	a.anonymized += n
	a.removed = a.removed[:0]
}
