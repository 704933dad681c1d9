package daemon

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// PrepareTask creates task id in ws with a plan of n independent subtasks
// (st_1 … st_n) and drops the done marker that proposes it, as a
// coordinator does; ApprovePlan then approves it. Benchmarks and tests use
// them; they are ordinary agent work through the workspace API.
func PrepareTask(ctx context.Context, ws *workspace.Workspace, id string, n int) error {
	if _, err := ws.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "task " + id}); err != nil {
		return err
	}
	subs := make([]map[string]any, n)
	for i := range subs {
		subs[i] = map[string]any{"id": fmt.Sprintf("st_%d", i+1), "description": fmt.Sprintf("subtask %d", i+1)}
	}
	plan, _ := json.Marshal(map[string]any{"summary": "plan of " + id, "subtasks": subs})
	if _, err := ws.WritePlan(ctx, id, "coordinator", plan); err != nil {
		return err
	}
	if _, err := ws.WriteDone(workspace.DoneRequest{TaskID: id, Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		return err
	}
	return nil
}

// ApprovePlan writes a plan_review approving the task's plan and drops its
// done marker.
func ApprovePlan(ws *workspace.Workspace, id string) error {
	rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "approved"})
	rel, err := ws.WriteReview(id, "plan_review_1", "reviewer", rv)
	if err != nil {
		return err
	}
	_, err = ws.WriteDone(workspace.DoneRequest{TaskID: id, Agent: "reviewer", OutputFile: rel})
	return err
}
