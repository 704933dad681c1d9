package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// planDoc is plan.json of task id as the store holds it.
func planDoc(t *testing.T, s workspace.Store, id string) string {
	t.Helper()
	doc, err := s.ReadTaskDoc(bg, id, "plan.json")
	ok(t, err, "read plan.json")
	return string(doc)
}

// refusedApproved fails t unless err is the refusal of a plan write after
// approval, with its reason and what to do instead.
func refusedApproved(t *testing.T, err error, what string) {
	t.Helper()
	is(t, err, workspace.ErrConflict, what)
	var we *workspace.Error
	if !errors.As(err, &we) || !strings.Contains(we.Msg, "is approved, and an approved plan is never replaced; nothing was written") || we.Hint != workspace.AmendHint {
		t.Fatalf("%s: got %v, want the approved plan's refusal with the amend hint", what, err)
	}
}

// testPlanClosed: once the daemon approved a plan, WritePlan is refused
// before anything is written, and an amendment is written instead;
// before, an amendment is refused.
func testPlanClosed(t *testing.T, s workspace.Store, h Hooks) {
	newTask(t, s, "t0")
	_, err := s.WriteAmendment(bg, "t0", "coordinator", planJSON("s1"))
	is(t, err, workspace.ErrConflict, "amend a task with no plan")
	if _, err := s.ReadPlan(bg, "t0", 0); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("after a refused amendment: read plan: %v, want ErrNotFound", err)
	}

	approved(t, s, h, "t1", "s1", "s2")
	before := planDoc(t, s, "t1")
	_, err = s.WritePlan(bg, "t1", "coordinator", planJSON("s1", "s3"))
	refusedApproved(t, err, "write a plan after approval")
	if after := planDoc(t, s, "t1"); after != before {
		t.Fatalf("a refused plan write changed plan.json:\n%s\nwas\n%s", after, before)
	}
	if _, err := s.ReadPlan(bg, "t1", 2); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("after a refused plan write: read plan v2: %v, want ErrNotFound", err)
	}
	p, err := s.WriteAmendment(bg, "t1", "coordinator", planJSON("s1", "s2", "s3"))
	ok(t, err, "amend the approved plan")
	if p.Version != 2 {
		t.Fatalf("amendment written as v%d, want v2", p.Version)
	}
}

// testPlanRace races plan writers against the approval of the plan: a
// write that starts after the approval was seen is refused, and plan.json
// as the approval left it is never replaced.
func testPlanRace(t *testing.T, s workspace.Store, h Hooks) {
	newTask(t, s, "t1")
	_, err := s.WritePlan(bg, "t1", "coordinator", planJSON("s1"))
	ok(t, err, "write plan")
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "coordinator", OutputFile: "plan.json"})
	ok(t, err, "propose plan")
	h.Apply(t, s)
	rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "approved"})
	rel, err := s.WriteReview(bg, "t1", "plan_review_1", "reviewer", rv)
	ok(t, err, "write review")

	var (
		seen    atomic.Bool // the approval was read back from the state
		wg      sync.WaitGroup
		mu      sync.Mutex
		failure error
		written atomic.Int64
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	// The writers go on until refused, or until the test ends (a failure
	// to apply the review).
	ctx := t.Context()
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				after := seen.Load()
				_, err := s.WritePlan(ctx, "t1", "coordinator", planJSON("s1", fmt.Sprintf("w%d_%d", w, i)))
				switch {
				case err == nil && after:
					fail(fmt.Errorf("writer %d: a plan write that started after the approval was seen succeeded", w))
					return
				case err == nil:
					written.Add(1)
				case errors.Is(err, workspace.ErrConflict):
					return
				default:
					fail(fmt.Errorf("writer %d: %w", w, err))
					return
				}
			}
		})
	}
	_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
	ok(t, err, "done review")
	h.Apply(t, s)
	st, err := s.ReadState(bg, "t1")
	ok(t, err, "read state")
	if st.PlanStatus != "approved" {
		t.Fatalf("after the approving review: plan_status %q, want approved", st.PlanStatus)
	}
	seen.Store(true)
	approvedDoc := planDoc(t, s, "t1")
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	t.Logf("%d plan writes before the approval, every one after it refused", written.Load())
	_, err = s.WritePlan(bg, "t1", "coordinator", planJSON("s9"))
	refusedApproved(t, err, "write a plan after the race")
	if after := planDoc(t, s, "t1"); after != approvedDoc {
		t.Fatalf("plan.json changed after the approval (%d writes before it):\n%s\nwas\n%s", written.Load(), after, approvedDoc)
	}
}
