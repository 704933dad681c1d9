package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The verdict on a marker, as an agent reads it back: the journal record
// the marker became says when it was taken (its seq) and whether the
// daemon rejected it on reading; once the state's journal_seq reaches that
// seq, the state's errors say whether the machine refused it. Every store
// gives it the same way (a VerdictSource); machine.Judge reads it from a
// state and a record.

// Verdicts.
const (
	// VerdictWon: a claim was applied; the subtask is the agent's.
	VerdictWon = "won"
	// VerdictLost: a claim was refused (taken by another, blocked, the
	// task not executing or finished, ...).
	VerdictLost = "lost"
	// VerdictApplied: a done marker was applied.
	VerdictApplied = "applied"
	// VerdictRefused: a done marker was refused, or rejected on reading;
	// or a marker of either kind was refused unread because its name was
	// journaled already (Verdict.Journaled says as which record).
	VerdictRefused = "refused"
	// VerdictNotFound: the marker names a subtask the approved plan does
	// not have.
	VerdictNotFound = "not_found"
)

// Where a marker is on its way to a verdict.
const (
	// MarkerWaiting: still waiting to be taken (in the task directory, or
	// a store's markers).
	MarkerWaiting = "waiting"
	// MarkerTaken: journaled, but the state does not reflect it yet.
	MarkerTaken = "taken"
	// MarkerDecided: the state reflects its record; the verdict is known.
	MarkerDecided = "decided"
	// MarkerMissing: neither waiting nor in the journal (deleted by hand,
	// or read between a rename and the next listing).
	MarkerMissing = "missing"
)

// Errors of a wait for a verdict.
var (
	// ErrNotServing: no daemon serves the workspace, so a marker waiting
	// for its verdict stays undecided (see Wait).
	ErrNotServing = errors.New("no daemon serving")
	// ErrNoVerdict: the wait for a marker's verdict ended before the
	// daemon gave it.
	ErrNoVerdict = errors.New("no verdict yet")
)

// Polling bounds of Wait: a daemon decides a marker within a few
// milliseconds, so the first looks come quickly; a marker still waiting
// after that is looked at less often.
const (
	verdictPollMin = 5 * time.Millisecond
	verdictPollMax = 50 * time.Millisecond
	// servingProbe is how often Wait checks that a daemon still serves.
	// A probe of the file tree holds the daemon's lock for an instant,
	// which a daemon starting at that very instant would take for another
	// one serving: probes are kept rare.
	servingProbe = 500 * time.Millisecond
	// missingFor is how long a marker may be found nowhere (a listing
	// of the journal can pass between the rename of a taken marker and
	// the write of its record) before it counts as gone.
	missingFor = time.Second
)

// Wait waits for the daemon's verdict on the marker name of a task, read
// from src (see VerdictSource for after), until ctx is done. It fails
// with ErrNotServing when no daemon serves the workspace while the marker
// is undecided, with ErrNotFound when the marker is gone unjudged, and
// with ErrNoVerdict, saying where the marker was, when ctx ends first.
//
// A source that hears commits (CommitSource) is read again after each
// commit heard; the poll stays as the fallback.
func Wait(ctx context.Context, src VerdictSource, taskID, name string, after int64) (Verdict, error) {
	poll := verdictPollMin
	var lastProbe, missingSince time.Time
	var heard <-chan struct{}
	if cs, ok := As[CommitSource](src); ok {
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if c, err := cs.Commits(hctx, taskID); err == nil {
			heard = c // else the poll alone
		}
	}
	for {
		v, where, err := src.ReadVerdict(taskID, name, after)
		if err != nil {
			return Verdict{}, err
		}
		if where == MarkerDecided {
			return v, nil
		}
		now := time.Now()
		if where != MarkerMissing {
			missingSince = time.Time{}
		} else if missingSince.IsZero() {
			missingSince = now
		} else if now.Sub(missingSince) > missingFor {
			return Verdict{}, &Error{Kind: ErrNotFound, Op: "verdict on " + name,
				Msg:  "the marker is gone from the task directory and the journal has no record of it",
				Hint: "was it removed by hand? drop a new one"}
		}
		if now.Sub(lastProbe) >= servingProbe {
			lastProbe = now
			serving, err := src.Serving()
			if err != nil {
				return Verdict{}, err
			}
			if !serving {
				// The daemon may have decided just before it stopped.
				if v, where, err := src.ReadVerdict(taskID, name, after); err == nil && where == MarkerDecided {
					return v, nil
				}
				return Verdict{}, notServing(src.Where(), name, where)
			}
		}
		select {
		case <-ctx.Done():
			return Verdict{}, &Error{Kind: ErrNoVerdict, Op: "verdict on " + name, Err: ctx.Err(),
				Msg:  "no verdict yet: the marker is " + describeWhere(where),
				Hint: "the daemon decides it later; read the task's state to see, or wait longer"}
		case <-heard:
			continue
		case <-time.After(poll):
		}
		poll = min(2*poll, verdictPollMax)
	}
}

// notServing is the error of a marker left undecided with no daemon.
func notServing(root, name, where string) error {
	return &Error{Kind: ErrNotServing, Op: "verdict on " + name,
		Msg:  fmt.Sprintf("no daemon serves %s; the marker is %s", root, describeWhere(where)),
		Hint: "start the daemon (workspaced serve): it takes every marker waiting, and decides this one"}
}

func describeWhere(where string) string {
	switch where {
	case MarkerWaiting:
		return "waiting in the task directory, not yet taken"
	case MarkerTaken:
		return "journaled, not yet applied to state.json"
	}
	return "nowhere to be found yet"
}
