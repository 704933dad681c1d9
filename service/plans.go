package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// PlanOpen reports why task taskID takes no new plan version, or nil
// when it does: once a plan is approved it is never replaced (it is
// amended), and a finished task takes nothing. op names the operation in
// the error, of kind ErrConflict. A task whose state the daemon has not
// written yet takes a plan.
func PlanOpen(ctx context.Context, st workspace.Store, op, taskID string) error {
	s, err := st.ReadState(ctx, taskID)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return workspace.PlanClosed(op, taskID, &s, false)
}

// WritePlan writes data as the next version of the plan of task taskID,
// for agent: a plan write after approval is refused before anything is
// written, by the store's write, which decides while it holds the task
// (workspace.PlanClosed). Every door writes plans through it.
func WritePlan(ctx context.Context, st workspace.Store, taskID, agent string, data []byte) (workspace.Plan, error) {
	return st.WritePlan(ctx, taskID, agent, data)
}

// Amended is what AmendPlan did.
type Amended struct {
	// Plan is the version written.
	Plan workspace.Plan
	// Diff is what it changes in the running plan.
	Diff machine.Diff
	// Review says whether, by the workspace's settings, it waits for a
	// plan review before it applies.
	Review bool
	// Delivery is the marker that proposes it and what came of it.
	Delivery
}

// Words say what the amendment does: "adds f1, f2; withdraws s2".
func (a Amended) Words() string {
	var parts []string
	for _, p := range []struct {
		what string
		ids  []string
	}{{"adds", a.Diff.Added}, {"changes", a.Diff.Changed}, {"withdraws", a.Diff.Withdrawn}} {
		if len(p.ids) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.ids, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// AmendPlan amends the running plan of task taskID for agent: it writes
// the next version (the running one changed by a) and drops the done
// marker that proposes it, then waits as opt says for the daemon's
// verdict. What the daemon would refuse is refused before anything is
// written: a task with no approved plan, an amendment awaiting its
// review, a subtask that started changed or withdrawn (ErrConflict), an
// amendment that does not fit the plan (ErrInvalid).
func AmendPlan(ctx context.Context, st workspace.Store, taskID, agent string, a workspace.PlanAmendment, opt DeliverOptions) (Amended, error) {
	op := "amend the plan of task " + taskID
	if err := a.Check(); err != nil {
		return Amended{}, err
	}
	if err := BeforeMarker(ctx, st, op, taskID, false); err != nil {
		return Amended{}, err
	}
	s, err := st.ReadState(ctx, taskID)
	if errors.Is(err, workspace.ErrNotFound) {
		if _, terr := st.GetTask(ctx, taskID); terr != nil {
			return Amended{}, terr
		}
		s = machine.Init(workspace.Task{ID: taskID})
	} else if err != nil {
		return Amended{}, err
	}
	switch {
	case s.PlanStatus != machine.PlanApproved:
		return Amended{}, &workspace.Error{Kind: workspace.ErrConflict, Op: op,
			Msg:  fmt.Sprintf("task %s has no approved plan to amend (plan_status %s)", taskID, s.PlanStatus),
			Hint: "until a plan is approved, write a new version of it"}
	case s.Amendment != nil:
		return Amended{}, &workspace.Error{Kind: workspace.ErrConflict, Op: op,
			Msg:  fmt.Sprintf("amendment v%d of plan %s awaits its review; nothing was written", s.Amendment.Version, s.PlanID),
			Hint: "a plan review approves it or sends it back first; amend again after"}
	}
	cur, err := st.ReadPlan(ctx, taskID, s.PlanVersion)
	if err != nil {
		return Amended{}, fmt.Errorf("%s: read the running plan v%d: %w", op, s.PlanVersion, err)
	}
	next, err := a.Apply(*cur)
	if err != nil {
		return Amended{}, err
	}
	next.Version = cur.Version + 1
	d, err := machine.Amend(cur, &next, s)
	if err != nil {
		return Amended{}, &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: err.Error() + "; nothing was written",
			Hint: "only pending and blocked subtasks change or go; for more work on a started one, add a subtask"}
	}
	if d.Empty() {
		return Amended{}, workspace.Invalidf(op, "add subtasks, or change pending ones", "the amendment leaves every subtask as it is")
	}
	next.Version = 0
	data, err := json.Marshal(next)
	if err != nil {
		return Amended{}, fmt.Errorf("%s: encode: %w", op, err)
	}
	out := Amended{Diff: d, Review: d.NeedsReview(st.Settings().WithDefaults().Plans.AmendmentReview)}
	out.Delivery, err = Deliver(ctx, st, workspace.DoneRequest{TaskID: taskID, Agent: agent}, func(ctx context.Context) (string, error) {
		var err error
		out.Plan, err = st.WriteAmendment(ctx, taskID, agent, data)
		return "plan.json", err
	}, opt)
	return out, err
}

// RunningPlan is the plan version a reader asking for "the plan" of task
// taskID gets: once a plan is approved, the version the state runs
// (plan.json may then hold an amendment awaiting review, or one the
// daemon refused); before, 0, plan.json, the newest.
func RunningPlan(ctx context.Context, st workspace.Store, taskID string) int {
	s, err := st.ReadState(ctx, taskID)
	if err != nil || s.PlanStatus != machine.PlanApproved {
		return 0
	}
	return s.PlanVersion
}
