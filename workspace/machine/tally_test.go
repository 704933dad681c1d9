package machine

import (
	"maps"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// The fold keeps a tally of the subtasks instead of walking the task at
// every record (see tally). Every step of every test checks that tally
// against a fresh count of the state it folds, through the checked forms
// of the folds below; benchmarks call the exported folds, which check
// nothing.

// checkTally fails the test when the tally, if counted, is not what st
// holds: a change of a subtask's status that bypassed setStatus, or a
// tally not counted again when the subtasks were made anew.
func checkTally(tb testing.TB, rec workspace.JournalRecord, st *workspace.State, t *tally) {
	tb.Helper()
	if !t.counted {
		return
	}
	fresh := tally{held: map[string]int{}}
	for _, ss := range st.Subtasks {
		if ss != nil {
			fresh.add(ss, 1)
		}
	}
	// A worker whose count went back to 0 keeps its key.
	held := maps.Clone(t.held)
	maps.DeleteFunc(held, func(_ string, n int) bool { return n == 0 })
	same := t.blocked == fresh.blocked && t.inProgress == fresh.inProgress && t.completed == fresh.completed &&
		maps.Equal(held, fresh.held)
	if !same {
		tb.Fatalf("record %d: tally %+v, state holds %+v", rec.Seq, *t, fresh)
	}
}

// checkedStep is Step, checking the tally of the step.
func checkedStep(tb testing.TB, st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, *workspace.Plan, []workspace.Event) {
	tb.Helper()
	next, plan, events, t := step(st, plan, rec)
	checkTally(tb, rec, &next, t)
	return next, plan, events
}

// checkedApply is Apply, checking the tally of the step.
func checkedApply(tb testing.TB, st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, []workspace.Event) {
	tb.Helper()
	next, _, events := checkedStep(tb, st, plan, rec)
	return next, events
}

// checkedContinue is Continue, checking the fold's tally after every
// record.
func checkedContinue(tb testing.TB, st workspace.State, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord) (workspace.State, []workspace.Event, error) {
	tb.Helper()
	return continueFold(st, plans, recs, func(rec workspace.JournalRecord, st *workspace.State, t *tally) {
		checkTally(tb, rec, st, t)
	})
}

// checkedReplay is Replay, checking the fold's tally after every record.
func checkedReplay(tb testing.TB, task workspace.Task, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord) (workspace.State, []workspace.Event, error) {
	tb.Helper()
	return checkedContinue(tb, Init(task), plans, recs)
}
