package machine

import (
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Fold is a state that one owner (a task's committer) folds records into
// in place, commit after commit: it is copied once, when made, and keeps
// between folds the plan it tracks and the tally of its subtasks, so that
// a fold costs what its records change, not the size of the task. It
// notes the entries each fold changes (Changed), for an encoder that
// encodes and checks only those.
//
// A Fold is not safe for concurrent use. After a fold whose state is not
// written (an error anywhere on the way), its owner drops it and makes a
// new one from the state on disk.
type Fold struct {
	st      workspace.State
	plan    *workspace.Plan
	t       tally
	changed statecheck.Changed
}

// NewFold makes a fold of a copy of st; plan is the plan st tracks when
// known (nil: loaded when a record needs it).
func NewFold(st workspace.State, plan *workspace.Plan) *Fold {
	return &Fold{st: clone(st), plan: plan}
}

// Continue is machine.Continue in place: it folds recs, skipping those at
// or before the state's journal_seq, and returns their events. On an
// error (a plan that cannot be loaded) the state is that of the records
// before.
func (f *Fold) Continue(plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord) ([]workspace.Event, error) {
	plan, evs, err := foldOwned(&f.st, f.plan, plans, recs, &f.t, &f.changed, nil)
	f.plan = plan
	return evs, err
}

// State is the state folded so far. It shares its maps with the fold:
// the caller must not change it, and it changes with the next Continue.
func (f *Fold) State() workspace.State { return f.st }

// Plan is the plan the state tracks, when known.
func (f *Fold) Plan() *workspace.Plan { return f.plan }

// Changed returns the entries changed since the last call (or since the
// fold was made), and forgets them.
func (f *Fold) Changed() statecheck.Changed {
	c := f.changed
	f.changed = statecheck.Changed{}
	return c
}
