package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// ToolAmendPlan grows or trims the running plan.
const ToolAmendPlan = "amend_plan"

const descAmendPlan = "Grow the approved plan: add subtasks (may depend on existing ones), change or withdraw pending ones (these wait for a plan review). Returns the daemon's verdict."

// amendSubtask is a subtask of an amendment: write_plan's, its fields
// left undescribed (every client pays for the bytes of each listing).
type amendSubtask struct {
	ID           string   `json:"id" pattern:"id"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies,omitempty" pattern:"id"`
	MaxRetries   int      `json:"max_retries,omitempty" minimum:"0"`
}

type amendPlanInput struct {
	Add      []amendSubtask `json:"add,omitempty"`
	Change   []amendSubtask `json:"change,omitempty" jsonschema:"Replace pending subtasks by id."`
	Withdraw []string       `json:"withdraw,omitempty" pattern:"id"`
}

func subtasksOf(in []amendSubtask) []workspace.Subtask {
	out := make([]workspace.Subtask, len(in))
	for i, s := range in {
		out[i] = workspace.Subtask{ID: s.ID, Description: s.Description, Dependencies: s.Dependencies, MaxRetries: s.MaxRetries}
	}
	return out
}

func (s *Server) amendPlan(ctx context.Context, _ *mcp.CallToolRequest, in amendPlanInput) (reply, error) {
	a := workspace.PlanAmendment{Add: subtasksOf(in.Add), Change: subtasksOf(in.Change), Withdraw: in.Withdraw}
	am, err := service.AmendPlan(ctx, s.w, s.task, s.agent, a, s.deliverOptions())
	var me *service.MarkerError
	if errors.As(err, &me) {
		return reply{}, fmt.Errorf("wrote plan.json version %d, but no done marker proposes it: %w", am.Plan.Version, me.Err)
	}
	if err != nil {
		return reply{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote plan.json version %d, which %s, and proposed it (marker %s).\n", am.Plan.Version, am.Words(), am.Marker)
	then := fmt.Sprintf("%s shows plan_version %d; the new subtasks are claimed as the others.", ToolGetTaskState, am.Plan.Version)
	if am.Review {
		then = fmt.Sprintf("%s shows it under \"amendment\" until a plan review (%s, type plan_review) approves it (plan_version %d) or sends it back (the running version stays).",
			ToolGetTaskState, ToolWriteReview, am.Plan.Version)
	}
	return s.verdictReply(&b, markerOf(am.Marker, am.Outcome), fmt.Sprintf("plan version %d", am.Plan.Version), then,
		"only pending and blocked subtasks change or go; "+ToolGetTaskState+" shows which those are")
}
