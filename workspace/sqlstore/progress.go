package sqlstore

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// inProgress is what a committer keeps of its task's subtasks in
// progress between commits, so that a commit pays for the subtasks it
// changed, not for every subtask of the task: the subtasks in progress
// of the state the committer knows (machine.Progress), the plan read
// last and the complexity it estimates, by subtask.
type inProgress struct {
	items      machine.Progress
	plan       *workspace.Plan
	complexity map[string]string
}

// update brings the subtasks in progress to st, task taskID's state:
// changed is what changed since the state p holds (nil: not known, every
// subtask looked at). plan is st's plan when known; else the plan is read
// once, and kept. It returns them, with their complexity.
func (p *inProgress) update(ctx context.Context, s *Store, taskID string, st workspace.State, plan *workspace.Plan, changed *statecheck.Changed) []workspace.InProgress {
	if plan != p.plan {
		p.plan, p.complexity = plan, nil
	}
	p.items.Note(taskID, st, changed)
	if p.items.Len() == 0 {
		return nil
	}
	if pl := p.plan; pl == nil || pl.ID != st.PlanID || pl.Version != st.PlanVersion {
		p.plan, p.complexity = nil, nil
		if pl, err := s.ReadPlan(ctx, taskID, st.PlanVersion); err == nil && pl != nil && pl.ID == st.PlanID && pl.Version == st.PlanVersion {
			p.plan = pl
		}
	}
	if p.complexity == nil {
		p.complexity = machine.Complexity(p.plan)
	}
	return p.items.AppendTo(make([]workspace.InProgress, 0, p.items.Len()), p.complexity)
}
