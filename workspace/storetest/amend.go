package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// amendPlan writes the running plan of task id amended by a as its next
// version and proposes it, then waits for the daemon; it returns the
// state the daemon left.
func amendPlan(t *testing.T, s workspace.Store, h Hooks, id, agent string, a workspace.PlanAmendment) workspace.State {
	t.Helper()
	st, err := s.ReadState(bg, id)
	ok(t, err, "read state")
	cur, err := s.ReadPlan(bg, id, st.PlanVersion)
	ok(t, err, "read the running plan")
	next, err := a.Apply(*cur)
	ok(t, err, "amend")
	data, err := json.Marshal(next)
	ok(t, err, "encode")
	_, err = s.WriteAmendment(bg, id, agent, data)
	ok(t, err, "write the amended plan")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: id, Agent: agent, OutputFile: "plan.json"})
	ok(t, err, "propose the amended plan")
	h.Apply(t, s)
	st, err = s.ReadState(bg, id)
	ok(t, err, "read state")
	return st
}

// testAmendments: a running plan grows by amendments the daemon judges on
// every store — additions at once, a withdrawal after its plan review
// (the version it reviews loaded by the store), a started subtask never
// changed — each with its events.
func testAmendments(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1", "s2")
	_, err := s.WriteClaim(bg, "t1", "w1", "s1")
	ok(t, err, "claim s1")
	h.Apply(t, s)

	// A worker finds more work: two subtasks after s1, applied at once.
	st := amendPlan(t, s, h, "t1", "w1", workspace.PlanAmendment{Add: []workspace.Subtask{
		{ID: "f1", Description: "process f1", Dependencies: []string{"s1"}},
		{ID: "f2", Description: "process f2"},
	}})
	if st.PlanVersion != 2 || st.Amendment != nil {
		t.Fatalf("after an addition: plan v%d, amendment %+v; want v2 and none waiting", st.PlanVersion, st.Amendment)
	}
	if f1, f2 := st.Subtasks["f1"], st.Subtasks["f2"]; f1 == nil || f1.Status != "blocked" || !slices.Equal(f1.BlockedBy, []string{"s1"}) || f2 == nil || f2.Status != "pending" {
		t.Fatalf("added subtasks: f1 %+v, f2 %+v; want f1 blocked by s1, f2 pending", f1, f2)
	}

	// A withdrawal waits for its review; the running version stays.
	st = amendPlan(t, s, h, "t1", "coordinator", workspace.PlanAmendment{Withdraw: []string{"s2"}})
	if st.PlanVersion != 2 || st.Amendment == nil || st.Amendment.Version != 3 || !slices.Equal(st.Amendment.Withdrawn, []string{"s2"}) || st.Subtasks["s2"] == nil {
		t.Fatalf("after a withdrawal: plan v%d, amendment %+v, s2 %+v; want v2 running and v3 awaiting review", st.PlanVersion, st.Amendment, st.Subtasks["s2"])
	}
	rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "approved"})
	rel, err := s.WriteReview(bg, "t1", "amendment_v3", "reviewer", rv)
	ok(t, err, "write the amendment's review")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
	ok(t, err, "done review")
	h.Apply(t, s)
	st, err = s.ReadState(bg, "t1")
	ok(t, err, "read state")
	if st.PlanVersion != 3 || st.Amendment != nil || st.Subtasks["s2"] != nil || len(st.Subtasks) != 3 {
		t.Fatalf("after the review: plan v%d, amendment %+v, %d subtasks; want v3 without s2", st.PlanVersion, st.Amendment, len(st.Subtasks))
	}

	// A subtask in progress never changes: the daemon refuses, the
	// running version stays.
	st = amendPlan(t, s, h, "t1", "coordinator", workspace.PlanAmendment{Change: []workspace.Subtask{{ID: "s1", Description: "other"}}})
	if st.PlanVersion != 3 || st.Amendment != nil || !strings.Contains(st.Errors[len(st.Errors)-1].Message, "subtask s1 is in_progress and cannot be changed") {
		t.Fatalf("after changing s1: plan v%d, errors %+v", st.PlanVersion, st.Errors)
	}

	evs, _, err := s.ReadEvents(bg, "t1")
	ok(t, err, "read events")
	var names []string
	for _, e := range evs {
		switch e.Name {
		case "plan_amended", "amendment_proposed":
			names = append(names, e.Name+":"+e.Attrs["version"])
		}
	}
	if want := []string{"plan_amended:2", "amendment_proposed:3", "plan_amended:3"}; !slices.Equal(names, want) {
		t.Fatalf("amendment events %v, want %v", names, want)
	}

	// The new subtasks run as the others, and the task completes with
	// them.
	for _, id := range []string{"s1", "f1", "f2"} {
		rel, err := s.WriteOutput(bg, "t1", id, "w1", []byte(`{"summary":"ok"}`))
		ok(t, err, "output "+id)
		_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w1", SubtaskID: id, OutputFile: rel})
		ok(t, err, "done "+id)
		h.Apply(t, s)
	}
	st, err = s.ReadState(bg, "t1")
	ok(t, err, "read state")
	if st.Status != "completed" {
		t.Fatalf("after every subtask: status %s, subtasks %+v", st.Status, st.Subtasks)
	}
}
