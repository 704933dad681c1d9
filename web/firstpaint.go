package web

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

// firstPaintSubtasks bounds the subtasks the first paint lists; the
// script shows them all.
const firstPaintSubtasks = 200

// firstPaint is what the task page shows before its script has run: the
// task, where it stands, and its subtasks, from the store as the request
// finds it. html/template escapes every field.
type firstPaint struct {
	ID          string
	Description string
	Status      string // "" before the daemon has seen the task
	Phase       string
	PlanStatus  string
	PlanVersion int
	Done, Total int
	Subtasks    []paintedSubtask
	More        int // subtasks not listed
}

type paintedSubtask struct {
	ID, Status, Worker, Description string
}

// firstPaint reads the task id for its first paint, or nil when it cannot
// be read (a bad id, no such task): the script then says why.
func (s *Server) firstPaint(ctx context.Context, id string) *firstPaint {
	if workspace.ValidateID("task id", id) != nil {
		return nil
	}
	t, err := s.st.GetTask(ctx, id)
	if err != nil {
		return nil
	}
	f := &firstPaint{ID: t.ID, Description: t.Description}
	st, serr := s.st.ReadState(ctx, id)
	if serr == nil {
		f.Status, f.Phase, f.PlanStatus, f.PlanVersion = st.Status, st.Phase, st.PlanStatus, st.PlanVersion
	}
	p, err := s.st.ReadPlan(ctx, id, 0)
	if err != nil || p == nil {
		return f
	}
	f.Total = len(p.Subtasks)
	for _, sub := range p.Subtasks {
		ps := paintedSubtask{ID: sub.ID, Status: "pending", Description: sub.Description}
		if serr == nil {
			if ss := st.Subtasks[sub.ID]; ss != nil {
				ps.Status, ps.Worker = ss.Status, ss.Worker
			}
		}
		if ps.Status == "completed" {
			f.Done++
		}
		if len(f.Subtasks) < firstPaintSubtasks {
			f.Subtasks = append(f.Subtasks, ps)
		}
	}
	f.More = f.Total - len(f.Subtasks)
	return f
}
