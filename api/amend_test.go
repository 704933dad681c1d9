package api

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestPlanAmendments: on every store, a plan write after approval is
// refused with 409 before anything is written, and the amendment route
// adds subtasks at once and holds a withdrawal for its review.
func TestPlanAmendments(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			serveDaemon(t, st)
			srv := server(t, st, &httpauth.Gate{TrustLoopback: true})
			planner, reviewer := as(t, srv, "planner"), as(t, srv, "reviewer")
			planner.want(planner.do("POST", "/api/v1/tasks", map[string]any{"id": "t1", "description": "grow"}), 201, "create")
			p := planner.want(planner.do("POST", "/api/v1/tasks/t1/plan/amendments", map[string]any{"add": []map[string]any{{"id": "s2", "description": "x"}}}), 409, "amend before approval").problem(t)
			if !strings.Contains(p.Detail, "task t1 has no approved plan to amend") {
				t.Fatalf("amend before approval: %+v", p)
			}
			plan := map[string]any{"subtasks": []map[string]any{{"id": "s1", "description": "first"}, {"id": "s2", "description": "second"}}}
			planner.want(planner.do("POST", "/api/v1/tasks/t1/plan?propose=true&wait=30s", plan), 200, "propose")
			reviewer.want(reviewer.do("PUT", "/api/v1/tasks/t1/reviews/r1?done=true&wait=30s", map[string]any{"type": "plan_review", "verdict": "approved"}), 200, "approve")

			p = planner.want(planner.do("POST", "/api/v1/tasks/t1/plan?propose=true&wait=30s", plan), 409, "plan after approval").problem(t)
			if p.Kind != kindConflict || !strings.Contains(p.Detail, "an approved plan is never replaced; nothing was written") || !strings.Contains(p.Hint, "amend the running plan") {
				t.Fatalf("plan after approval: %+v", p)
			}
			var cur workspace.Plan
			planner.want(planner.do("GET", "/api/v1/tasks/t1/plan", nil), 200, "read plan").json(t, &cur)
			if cur.Version != 1 {
				t.Fatalf("plan after a refused write: v%d", cur.Version)
			}

			var am amendment
			add := map[string]any{"add": []map[string]any{{"id": "f1", "description": "found", "dependencies": []string{"s1"}}}}
			planner.want(planner.do("POST", "/api/v1/tasks/t1/plan/amendments?wait=30s", add), 200, "add").json(t, &am)
			if am.Version != 2 || am.Review || am.Stands != service.Decided || am.Verdict.Verdict != workspace.VerdictApplied || len(am.Added) != 1 {
				t.Fatalf("addition: %+v", am)
			}
			planner.want(planner.do("POST", "/api/v1/tasks/t1/plan/amendments?wait=30s", map[string]any{"withdraw": []string{"s2"}}), 200, "withdraw").json(t, &am)
			if am.Version != 3 || !am.Review || am.Verdict.Verdict != workspace.VerdictApplied {
				t.Fatalf("withdrawal: %+v", am)
			}
			var sum struct {
				State *workspace.State `json:"state"`
			}
			planner.want(planner.do("GET", "/api/v1/tasks/t1", nil), 200, "show").json(t, &sum)
			if sum.State.PlanVersion != 2 || sum.State.Amendment == nil || sum.State.Amendment.Version != 3 {
				t.Fatalf("state while the withdrawal waits: %+v", sum.State)
			}
			// The plan is the version the daemon runs; the one awaiting
			// review is read by its number.
			planner.want(planner.do("GET", "/api/v1/tasks/t1/plan", nil), 200, "read the running plan").json(t, &cur)
			if cur.Version != 2 || len(cur.Subtasks) != 3 {
				t.Fatalf("the plan while an amendment waits: v%d, %d subtasks", cur.Version, len(cur.Subtasks))
			}
			planner.want(planner.do("GET", "/api/v1/tasks/t1/plan?version=3", nil), 200, "read the amendment").json(t, &cur)
			if cur.Version != 3 || len(cur.Subtasks) != 2 {
				t.Fatalf("the amendment: v%d, %d subtasks", cur.Version, len(cur.Subtasks))
			}
			for _, c := range []struct {
				body       string
				status     int
				kind, want string
			}{
				{`{"add":[{"id":"f9","description":"x"}]}`, 409, kindConflict, "amendment v3 of plan plan_t1 awaits its review"},
				{`{}`, 400, "", "the amendment is empty"},
				{`{"add":[{"id":"../x","description":"x"}]}`, 400, "", "subtask id"},
				{`{"withdraw":["s1"],"extra":1}`, 400, "", "unknown field"},
			} {
				p := planner.want(planner.do("POST", "/api/v1/tasks/t1/plan/amendments", c.body), c.status, c.body).problem(t)
				if !strings.Contains(p.Detail, c.want) || (c.kind != "" && p.Kind != c.kind) {
					t.Errorf("%s: %+v", c.body, p)
				}
			}
		})
	}
}
