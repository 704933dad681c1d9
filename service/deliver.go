package service

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Where a marker stands once Await returns.
const (
	// Queued: no daemon serves, so none decided; one decides once it
	// starts.
	Queued = "queued"
	// Undecided: a daemon serves, but did not decide within the wait.
	Undecided = "undecided"
	// Decided: the daemon gave its verdict (Outcome.Verdict).
	Decided = "decided"
)

// Outcome is what came of a marker by the end of a wait.
type Outcome struct {
	// Stands is Queued, Undecided or Decided; "" when nobody waited.
	Stands string
	// Verdict is the daemon's verdict when Decided.
	Verdict workspace.Verdict
}

// Await waits, at most d, for the daemon's verdict on marker (its name or
// its path: the base is the name) of task taskID, read from src; after is
// the state's journal_seq before the marker was dropped. serving is
// whether a daemon served when the marker was dropped: without one the
// marker is Queued at once, which is no error, as it is when the daemon
// stops while the marker waits. An error is a failure to read where the
// marker stands.
func Await(ctx context.Context, src workspace.VerdictSource, taskID, marker string, after int64, serving bool, d time.Duration) (Outcome, error) {
	if !serving || src == nil {
		return Outcome{Stands: Queued}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := workspace.Wait(ctx, src, taskID, path.Base(marker), after)
	switch {
	case errors.Is(err, workspace.ErrNotServing):
		return Outcome{Stands: Queued}, nil
	case errors.Is(err, workspace.ErrNoVerdict):
		return Outcome{Stands: Undecided}, nil
	case err != nil:
		return Outcome{}, err
	}
	return Outcome{Stands: Decided, Verdict: v}, nil
}

// Serving reports whether a daemon serves the workspace src reads; false
// when src is nil or cannot tell.
func Serving(src workspace.VerdictSource) bool {
	if src == nil {
		return false
	}
	ok, err := src.Serving()
	return err == nil && ok
}

// DeliverOptions are how Deliver waits for the daemon's verdict.
type DeliverOptions struct {
	// Wait bounds the wait for the verdict; zero drops the marker and
	// returns without waiting.
	Wait time.Duration
	// Verdicts is where the verdict is read; nil reads it where the
	// store keeps it (Verdicts).
	Verdicts workspace.VerdictSource
}

// Delivery is what Deliver did.
type Delivery struct {
	// Product is the path write wrote, relative to the task directory
	// ("" without write).
	Product string
	// Marker is the done marker as the store names it: its path
	// relative to the root on a tree, its name on a database.
	Marker string
	// After is the state's journal_seq before the marker was dropped.
	After int64
	// Outcome is what came of the marker; its Stands is "" without a
	// wait.
	Outcome
}

// A MarkerError is a product written whose done marker could not be
// dropped: the product stays, and nothing reports it to the daemon yet.
type MarkerError struct {
	Product string // relative to the task directory
	Err     error
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("%s written, but the done marker failed: %v", e.Product, e.Err)
}

func (e *MarkerError) Unwrap() error { return e.Err }

// Deliver writes a product, drops the done marker that reports it and
// waits, bounded, for the daemon's verdict: the one way every door
// finishes a plan, an output or a review. write, when not nil, writes the
// product and returns its path relative to the task directory, which
// becomes req.OutputFile; nil reports what req names. The state's
// journal_seq and whether a daemon serves are read before anything is
// written, so the verdict read is the one on this marker. A marker that
// cannot be dropped after its product was written fails with a
// *MarkerError; a wait that sees no daemon, or no verdict in time, is no
// error (Outcome says so).
func Deliver(ctx context.Context, st workspace.Store, req workspace.DoneRequest, write func(context.Context) (string, error), opt DeliverOptions) (Delivery, error) {
	var d Delivery
	serving := false
	src := opt.Verdicts
	if opt.Wait > 0 {
		if s, err := st.ReadState(ctx, req.TaskID); err == nil {
			d.After = s.JournalSeq
		}
		if src == nil {
			src, _ = Verdicts("", st)
		}
		serving = Serving(src)
	}
	if write != nil {
		rel, err := write(ctx)
		if err != nil {
			return d, err
		}
		d.Product, req.OutputFile = rel, rel
	}
	m, err := st.WriteDone(ctx, req)
	if err != nil {
		if d.Product != "" {
			return d, &MarkerError{Product: d.Product, Err: err}
		}
		return d, err
	}
	d.Marker = m
	if opt.Wait <= 0 {
		return d, nil
	}
	d.Outcome, err = Await(ctx, src, req.TaskID, m, d.After, serving, opt.Wait)
	return d, err
}
