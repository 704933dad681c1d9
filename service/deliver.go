package service

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/workspaced/workspaced/vocab"
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
	// Why is, when the wait ended Queued or Undecided, the wait's error
	// saying where the marker stands (workspace.ErrNotServing,
	// workspace.ErrNoVerdict); nil when no daemon served at the drop.
	Why error
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
		return Outcome{Stands: Queued, Why: err}, nil
	case errors.Is(err, workspace.ErrNoVerdict):
		return Outcome{Stands: Undecided, Why: err}, nil
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
	// Served says the caller has made sure a daemon serves (and refused
	// to drop the marker otherwise): the wait is then not skipped, and a
	// daemon that stops meanwhile ends it Queued with Why saying so.
	Served bool
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
// finishes a plan, an output or a review, or reports a done without a
// product (a cancel, a failure). write, when not nil, writes the product
// and returns its path relative to the task directory, which becomes
// req.OutputFile; nil reports what req names. The state's journal_seq
// and whether a daemon serves are read before anything is written, so
// the verdict read is the one on this marker. A marker that cannot be
// dropped after its product was written fails with a *MarkerError; a
// wait that sees no daemon, or no verdict in time, is no error (Outcome
// says so). An error with Delivery.Marker set is the wait's: the marker
// was dropped.
func Deliver(ctx context.Context, st workspace.Store, req workspace.DoneRequest, write func(context.Context) (string, error), opt DeliverOptions) (Delivery, error) {
	return drop(ctx, st, req.TaskID, opt, func(ctx context.Context) (string, string, error) {
		product := ""
		if write != nil {
			rel, err := write(ctx)
			if err != nil {
				return "", "", err
			}
			product, req.OutputFile = rel, rel
		}
		m, err := st.WriteDone(ctx, req)
		if err != nil && product != "" {
			return "", product, &MarkerError{Product: product, Err: err}
		}
		return m, product, err
	})
}

// Claim drops agent's claim of subtask sub of task taskID and waits,
// bounded, for the daemon's verdict (won, or lost and why), as Deliver
// waits.
func Claim(ctx context.Context, st workspace.Store, taskID, agent, sub string, opt DeliverOptions) (Delivery, error) {
	return drop(ctx, st, taskID, opt, func(ctx context.Context) (string, string, error) {
		m, err := st.WriteClaim(ctx, taskID, agent, sub)
		return m, "", err
	})
}

// Cancel drops agent's done marker that cancels task taskID, saying why
// (reason), and waits, bounded, for the daemon's verdict, as Deliver
// waits.
func Cancel(ctx context.Context, st workspace.Store, taskID, agent, reason string, opt DeliverOptions) (Delivery, error) {
	return Deliver(ctx, st, workspace.DoneRequest{TaskID: taskID, Agent: agent, Status: "cancelled", Error: reason}, nil, opt)
}

// drop is what Deliver, Claim and Cancel share: read where the task
// stands, drop the marker (which returns the marker and the product it
// reports), wait for the verdict.
func drop(ctx context.Context, st workspace.Store, taskID string, opt DeliverOptions, marker func(context.Context) (m, product string, err error)) (Delivery, error) {
	var d Delivery
	serving := opt.Served
	src := opt.Verdicts
	if opt.Wait > 0 {
		if h, err := st.ReadStateHead(ctx, taskID); err == nil {
			d.After = h.JournalSeq
		}
		if src == nil {
			src, _ = Verdicts("", st)
		}
		serving = serving || Serving(src)
	}
	m, product, err := marker(ctx)
	d.Product = product
	if err != nil {
		return d, err
	}
	d.Marker = m
	if opt.Wait <= 0 {
		return d, nil
	}
	d.Outcome, err = Await(ctx, src, taskID, m, d.After, serving, opt.Wait)
	return d, err
}

// BeforeMarker checks, before a marker of task taskID is dropped, what
// makes dropping it or waiting for its verdict pointless: a task that is
// finished (the daemon takes nothing more for it, and no longer watches
// it: ErrConflict) and, with wait, no daemon serving (ErrNotServing,
// nothing dropped). op names the operation in the error.
func BeforeMarker(ctx context.Context, st workspace.Store, op, taskID string, wait bool) error {
	h, err := st.ReadStateHead(ctx, taskID)
	if err == nil && vocab.Finished(h.Status) {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: fmt.Sprintf("task %s is %s: the daemon takes nothing more for it", taskID, h.Status),
			Hint: "a finished task stays finished; start a new task for more work"}
	}
	// A task the daemon has not seen yet, or a corrupt state.json (the
	// daemon repairs it), still takes the marker.
	if !wait {
		return nil
	}
	src, err := Verdicts(op+" --wait", st)
	if err != nil {
		return err
	}
	serving, err := src.Serving()
	if err != nil {
		return err
	}
	if !serving {
		return &workspace.Error{Kind: workspace.ErrNotServing, Op: op, Msg: "no daemon serves " + src.Where() + ", so no verdict would come; nothing was dropped",
			Hint: "start the daemon (workspaced serve), or drop the marker without waiting: the daemon takes it when it starts"}
	}
	return nil
}
