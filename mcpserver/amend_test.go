package mcpserver

import (
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestAmendPlan: with a daemon serving, amend_plan adds subtasks at once
// and holds a withdrawal for its plan review; write_plan after approval
// is refused; what the daemon would refuse is refused first, nothing
// written.
func TestAmendPlan(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	runDaemon(t, w)
	planner := connect(t, w, Options{TaskID: "t1", Agent: "planner"})
	reviewer := connect(t, w, Options{TaskID: "t1", Agent: "reviewer"})
	worker := connect(t, w, Options{TaskID: "t1", Agent: "worker_1"})

	ask(t, worker, ToolAmendPlan, map[string]any{"add": []any{map[string]any{"id": "f1", "description": "x"}}}).
		expect(t, "amend_plan before any plan", true, "", "task t1 has no approved plan to amend", "hint: until a plan is approved, write a new version of it")
	ask(t, planner, ToolWritePlan, map[string]any{"subtasks": []any{
		map[string]any{"id": "st_1", "description": "first"},
		map[string]any{"id": "st_2", "description": "second"},
	}}).expect(t, "write_plan", false, verdictApplied)
	ask(t, reviewer, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}).expect(t, "approve", false, verdictApplied)
	ask(t, worker, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}).expect(t, "claim", false, verdictWon)

	ask(t, worker, ToolAmendPlan, map[string]any{"add": []any{
		map[string]any{"id": "f1", "description": "found: b.txt", "dependencies": []string{"st_1"}},
		map[string]any{"id": "f2", "description": "found: c.txt"},
	}}).expect(t, "amend_plan add", false, verdictApplied, "Wrote plan.json version 2, which adds f1, f2", "get_task_state shows plan_version 2")
	ask(t, worker, ToolAmendPlan, map[string]any{"change": []any{map[string]any{"id": "st_1", "description": "other"}}}).
		expect(t, "amend_plan change st_1", true, "", "subtask st_1 is in_progress and cannot be changed", "nothing was written")
	ask(t, planner, ToolAmendPlan, map[string]any{"withdraw": []string{"st_2"}}).
		expect(t, "amend_plan withdraw", false, verdictApplied, "which withdraws st_2", "until a plan review")
	ask(t, planner, ToolAmendPlan, map[string]any{"withdraw": []string{"f2"}}).
		expect(t, "amend_plan while one awaits review", true, "", "amendment v3 of plan plan_t1 awaits its review")
	if got := mustCall(t, planner, ToolGetPlan, nil); !strings.Contains(got, `"version":2`) || !strings.Contains(got, `"st_2"`) {
		t.Errorf("get_plan while an amendment waits: %s, want the running v2", got)
	}
	if got := mustCall(t, planner, ToolGetPlan, map[string]any{"version": 3}); !strings.Contains(got, `"version":3`) || strings.Contains(got, `"st_2"`) {
		t.Errorf("get_plan version 3: %s, want the amendment", got)
	}
	ask(t, planner, ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_9", "description": "late"}}}).
		expect(t, "write_plan after approval", true, "", "an approved plan is never replaced", "hint: amend the running plan instead")
	ask(t, reviewer, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}).expect(t, "approve the amendment", false, verdictApplied)
	st, err := w.ReadState(t.Context(), "t1")
	if err != nil || st.PlanVersion != 3 || st.Amendment != nil || st.Subtasks["st_2"] != nil || st.Subtasks["f2"] == nil {
		t.Fatalf("state after the amendment's review: %+v, %v", st, err)
	}
}
