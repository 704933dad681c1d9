package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// testTokenInMarkerEvents: a claim or a done dropped with a token in its
// context (workspace.WithToken, as the API and MCP drop them) carries the
// token's id, and the daemon names it beside the agent in every event of
// that marker — the plan proposed, the review, the claim won or refused,
// the work completed; a marker dropped without one (the command line, a
// marker written by hand) names none.
func testTokenInMarkerEvents(t *testing.T, s workspace.Store, h Hooks) {
	newTask(t, s, "t1")
	const planner, worker, reviewer = "tk_00000000000a", "tk_00000000000b", "tk_00000000000c"
	_, err := s.WritePlan(bg, "t1", "planner", planJSON("s1"))
	ok(t, err, "write plan")
	_, err = s.WriteDone(workspace.WithToken(bg, planner), workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"})
	ok(t, err, "done plan with a token")
	h.Apply(t, s)
	rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "approved"})
	rel, err := s.WriteReview(bg, "t1", "plan_review_1", "reviewer", rv)
	ok(t, err, "write review")
	_, err = s.WriteDone(workspace.WithToken(bg, reviewer), workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
	ok(t, err, "done review with a token")
	h.Apply(t, s)
	_, err = s.WriteClaim(workspace.WithToken(bg, worker), "t1", "worker_1", "s1")
	ok(t, err, "claim with a token")
	h.Apply(t, s)
	_, err = s.WriteClaim(bg, "t1", "worker_2", "s1")
	ok(t, err, "claim without a token")
	_, err = s.WriteClaim(workspace.WithToken(bg, reviewer), "t1", "reviewer", "s1")
	ok(t, err, "a losing claim with a token")
	h.Apply(t, s)
	out, _ := json.Marshal(map[string]any{"status": "completed", "summary": "done"})
	rel, err = s.WriteOutput(bg, "t1", "s1", "worker_1", out)
	ok(t, err, "write output")
	_, err = s.WriteDone(workspace.WithToken(bg, worker), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: rel})
	ok(t, err, "done with a token")
	h.Apply(t, s)

	all, _, err := s.ReadEvents(bg, "t1")
	ok(t, err, "read the events")
	read, _ := readEventsFrom(t, s, "t1", 0, len(all))
	var got []string
	for _, e := range read {
		switch e.Name {
		case "plan_ready", "plan_approved", "work_assigned", "claim_refused", "work_completed", "task_completed":
			got = append(got, e.Name+":"+e.Attrs[workspace.EventToken])
		}
	}
	same(t, "the token each marker's events name", strings.Join(got, " "), strings.Join([]string{
		"plan_ready:" + planner, "plan_approved:" + reviewer, "work_assigned:" + worker,
		"claim_refused:", "claim_refused:" + reviewer, "work_completed:" + worker, "task_completed:" + worker}, " "))
}
