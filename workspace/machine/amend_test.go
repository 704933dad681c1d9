package machine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// amended is smallPlan(1) amended as version v by edit.
func amended(v int, edit func(p *workspace.Plan)) *workspace.Plan {
	p := smallPlan(v)
	edit(p)
	return p
}

// journalPlans loads a plan version from the records that carried it.
func journalPlans(recs []workspace.JournalRecord) func(int) (*workspace.Plan, error) {
	return func(v int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == v {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d", v)
	}
}

func replayed(t *testing.T, j *journal) (workspace.State, []workspace.Event) {
	t.Helper()
	st, evs, err := Replay(workspace.Task{ID: "task_t1", CreatedAt: t0}, journalPlans(j.recs), j.recs)
	if err != nil {
		t.Fatal(err)
	}
	return st, evs
}

func lastEvent(evs []workspace.Event, name string) *workspace.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Name == name {
			return &evs[i]
		}
	}
	return nil
}

func TestAmendAddsSubtasksAtOnce(t *testing.T) {
	// st_1 done; a worker finds two more pieces of work, one after st_1
	// (completed: pending at once), one after st_2 (not yet: blocked).
	j := approved().claim("worker_1", "st_1").done("worker_1", "st_1")
	j.propose("worker_1", amended(2, func(p *workspace.Plan) {
		p.Subtasks = append(p.Subtasks,
			workspace.Subtask{ID: "st_4", Description: "found", Dependencies: []string{"st_1"}},
			workspace.Subtask{ID: "st_5", Description: "found too", Dependencies: []string{"st_2"}})
	}))
	st, evs := replayed(t, j)
	if st.PlanVersion != 2 || st.Amendment != nil || st.PlanStatus != PlanApproved {
		t.Fatalf("plan v%d %s, amendment %+v: want v2 approved, none pending", st.PlanVersion, st.PlanStatus, st.Amendment)
	}
	if s := st.Subtasks["st_4"]; s == nil || s.Status != SubtaskPending {
		t.Fatalf("st_4 = %+v, want pending", s)
	}
	if s := st.Subtasks["st_5"]; s == nil || s.Status != SubtaskBlocked || !slices.Equal(s.BlockedBy, []string{"st_2"}) {
		t.Fatalf("st_5 = %+v, want blocked by st_2", s)
	}
	e := lastEvent(evs, EventPlanAmended)
	if e == nil || e.Attrs["added"] != "st_4,st_5" || e.Attrs["from"] != "1" || e.Attrs["version"] != "2" || e.Attrs["agent"] != "worker_1" {
		t.Fatalf("plan_amended = %+v", e)
	}
	// The new subtasks run like the others, and the task completes
	// only once they are done.
	j.claim("worker_1", "st_2").done("worker_1", "st_2").done("worker_1", "st_3").done("worker_1", "st_4")
	j.review("reviewer", checkpointReview("review_c1", "checkpoint_1", VerdictApproved))
	if st, _ := replayed(t, j); st.Status != vocab.StatusExecuting || st.Subtasks["st_5"].Status != SubtaskPending {
		t.Fatalf("before st_5: status %s, st_5 %+v", st.Status, st.Subtasks["st_5"])
	}
	j.done("worker_1", "st_5")
	if st, _ := replayed(t, j); st.Status != vocab.StatusCompleted {
		t.Fatalf("after st_5: status %s, want completed", st.Status)
	}
}

func TestAmendChangesWaitForReview(t *testing.T) {
	j := approved().claim("worker_1", "st_1")
	// st_3 (pending) is withdrawn, st_2 (blocked) changed.
	v2 := amended(2, func(p *workspace.Plan) {
		p.Subtasks = p.Subtasks[:2]
		p.Subtasks[1].Description = "second, smaller"
	})
	j.propose("orchestrator", v2)
	st, evs := replayed(t, j)
	am := st.Amendment
	if st.PlanVersion != 1 || am == nil || am.Version != 2 || !slices.Equal(am.Withdrawn, []string{"st_3"}) || !slices.Equal(am.Changed, []string{"st_2"}) {
		t.Fatalf("plan v%d, amendment %+v: want v1 running, v2 awaiting review", st.PlanVersion, am)
	}
	if lastEvent(evs, EventAmendmentProposed) == nil || st.Subtasks["st_3"] == nil {
		t.Fatalf("events %v, st_3 %+v: want amendment_proposed and st_3 still there", eventNames(evs), st.Subtasks["st_3"])
	}
	// Another amendment waits for this one's review.
	j.propose("orchestrator", amended(3, func(p *workspace.Plan) {
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: "st_9", Description: "x"})
	}))
	if st, _ := replayed(t, j); !strings.Contains(st.Errors[len(st.Errors)-1].Message, "awaits its review") {
		t.Fatalf("a second amendment: errors %+v", st.Errors)
	}
	j.review("reviewer", planReview("review_a2", VerdictApproved))
	st, evs = replayed(t, j)
	if st.PlanVersion != 2 || st.Amendment != nil || st.Subtasks["st_3"] != nil {
		t.Fatalf("after approval: v%d, amendment %+v, st_3 %+v", st.PlanVersion, st.Amendment, st.Subtasks["st_3"])
	}
	if e := lastEvent(evs, EventPlanAmended); e == nil || e.Attrs["reviewer"] != "reviewer" || e.Attrs["agent"] != "orchestrator" {
		t.Fatalf("plan_amended = %+v", e)
	}
}

func TestAmendRejectedKeepsTheRunningPlan(t *testing.T) {
	j := approved()
	j.propose("orchestrator", amended(2, func(p *workspace.Plan) { p.Subtasks[2].Description = "other" }))
	j.review("reviewer", planReview("review_a2", VerdictRevisionNeeded, "keep st_3"))
	st, evs := replayed(t, j)
	if st.PlanVersion != 1 || st.Amendment != nil || st.Subtasks["st_3"].Status != SubtaskPending {
		t.Fatalf("v%d amendment %+v", st.PlanVersion, st.Amendment)
	}
	if e := lastEvent(evs, EventAmendmentRejected); e == nil || e.Attrs["issues"] != "keep st_3" {
		t.Fatalf("amendment_rejected = %+v", e)
	}
}

func TestAmendRefusals(t *testing.T) {
	cases := []struct {
		name string
		j    func() *journal
		p    *workspace.Plan
		want string
	}{
		{"a started subtask changed", func() *journal { return approved().claim("w", "st_1") },
			amended(2, func(p *workspace.Plan) { p.Subtasks[0].Description = "x" }), "subtask st_1 is in_progress and cannot be changed"},
		{"a completed subtask withdrawn", func() *journal { return approved().done("w", "st_3") },
			amended(2, func(p *workspace.Plan) { p.Subtasks = p.Subtasks[:2] }), "subtask st_3 is completed and cannot be withdrawn"},
		{"a checkpoint awaiting review changed", awaitingCheckpoint,
			amended(2, func(p *workspace.Plan) { p.Checkpoints[0].Subtasks = []string{"st_1"} }), "checkpoint checkpoint_1 is awaiting_review"},
		{"another plan id", approved, amended(2, func(p *workspace.Plan) { p.ID = "plan_2" }), "keeps the plan's id"},
		{"not newer", approved, amended(1, func(p *workspace.Plan) {}), "not newer"},
		{"nothing changed", approved, amended(2, func(p *workspace.Plan) { p.Summary = "only words" }), "changes no subtask"},
		{"a dependency on nothing", approved, amended(2, func(p *workspace.Plan) {
			p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: "st_4", Description: "x", Dependencies: []string{"st_0"}})
		}), "unknown subtask st_0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.j()
			before, _ := replayed(t, j)
			j.propose("orchestrator", c.p)
			st, evs := replayed(t, j)
			e := lastEvent(evs, EventMarkerRefused)
			if e == nil || !strings.Contains(e.Attrs["reason"], c.want) {
				t.Fatalf("refusal %+v, want one saying %q", e, c.want)
			}
			if st.PlanVersion != before.PlanVersion || len(st.Subtasks) != len(before.Subtasks) || st.Amendment != nil {
				t.Fatalf("a refused amendment changed the state: v%d, %d subtasks", st.PlanVersion, len(st.Subtasks))
			}
		})
	}
}

func TestAmendmentReviewSetting(t *testing.T) {
	add := amended(2, func(p *workspace.Plan) {
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: "st_4", Description: "x"})
	})
	change := amended(2, func(p *workspace.Plan) { p.Subtasks[2].Description = "other" })
	for _, c := range []struct {
		policy   string
		p        *workspace.Plan
		reviewed bool
	}{
		{"", add, false}, {"", change, true},
		{workspace.AmendReviewAlways, add, true}, {workspace.AmendReviewNever, change, false},
	} {
		j := approved()
		j.propose("orchestrator", c.p)
		j.recs[len(j.recs)-1].AmendmentReview = c.policy
		st, _ := replayed(t, j)
		if got := st.Amendment != nil; got != c.reviewed || (!got && st.PlanVersion != 2) {
			t.Errorf("policy %q, %v: awaiting review %v (v%d), want %v", c.policy, c.p.Subtasks[len(c.p.Subtasks)-1].ID, got, st.PlanVersion, c.reviewed)
		}
	}
}
