package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// An approved plan is not replaced: plan write (with or without
// --propose) after approval exits 4 and writes nothing, and task show
// still prints the approved version.
func TestApprovedPlanIsNotReplaced(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"},{"id":"st_2","description":"b","dependencies":["st_1"]}`)
	w.settled()
	before := w.Tree()
	for _, propose := range []bool{true, false} {
		args := []string{"plan", "write", "--task", "t1", "--file", "-", "--agent", "planner"}
		if propose {
			args = append(args, "--propose")
		}
		r := w.RunIn(`{"subtasks":[{"id":"st_9","description":"other"}]}`, args...)
		if r.Code != exitConflict || !strings.Contains(r.Stderr, "plan plan_t1 v1 of task t1 is approved, and an approved plan is never replaced; nothing was written") ||
			!strings.Contains(r.Stderr, "hint: amend the running plan instead") {
			t.Fatalf("plan write (propose %v) after approval: %v", propose, r)
		}
	}
	clitest.SameTree(t, before, w.Tree(), "a refused plan write")
	if out := w.Ok("task", "show", "t1"); !strings.Contains(out, "v1 (approved)") {
		t.Fatalf("task show after a refused plan write:\n%s", out)
	}
}

// plan amend: additions apply at once, a withdrawal waits for its plan
// review, and what the daemon would refuse is refused before writing.
func TestPlanAmend(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t0")
	w.Fails(exitConflict, "task t0 has no approved plan to amend (plan_status none)", "plan", "amend", "--task", "t0", "--add", "st_1=x")
	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a"},{"id":"st_2","description":"b"}`)
	w.Ok("claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1", "--wait")

	out := w.Ok("plan", "amend", "--task", "t1", "--agent", "w1", "--add", "f_1=process b.txt", "--add", "f_2=process c.txt", "--after", "st_1", "--wait")
	if !strings.Contains(out, "plan plan_t1 v2 adds f_1, f_2; it applies once the daemon takes it") || !strings.Contains(out, "applied (journal seq") {
		t.Fatalf("plan amend --add:\n%s", out)
	}
	show := w.Ok("state", "show", "--task", "t1", "--json")
	if !strings.Contains(show, `"plan_version": 2`) || !strings.Contains(show, `"f_2": {`) || !strings.Contains(show, `"blocked_by": [`) {
		t.Fatalf("state after the amendment:\n%s", show)
	}

	// A started subtask never changes: refused, nothing written.
	w.settled()
	before := w.Tree()
	r := w.RunIn(`{"change":[{"id":"st_1","description":"other"}]}`, "plan", "amend", "--task", "t1", "--file", "-")
	if r.Code != exitConflict || !strings.Contains(r.Stderr, "subtask st_1 is in_progress and cannot be changed") ||
		!strings.Contains(r.Stderr, "hint: only pending and blocked subtasks change or go") {
		t.Fatalf("withdraw st_1: %v", r)
	}
	w.Fails(exitFailure, "plan plan_t1 v2 has no subtask st_7 to withdraw", "plan", "amend", "--task", "t1", "--withdraw", "st_7")
	w.Fails(exitFailure, "subtask f_1 depends on st_1, which the amendment withdraws", "plan", "amend", "--task", "t1", "--withdraw", "st_1")
	w.Fails(exitUsage, "nothing to amend", "plan", "amend", "--task", "t1")
	clitest.SameTree(t, before, w.Tree(), "refused amendments")

	// A withdrawal waits for a plan review.
	var am amendOut
	clitest.Decode(t, w.Ok("plan", "amend", "--task", "t1", "--withdraw", "st_2", "--wait", "--json"), &am)
	if am.Version != 3 || !am.Review || len(am.Withdrawn) != 1 || am.Verdict == nil || am.Verdict.Verdict.Verdict != "applied" {
		t.Fatalf("plan amend --withdraw: %+v", am)
	}
	if show := w.Ok("state", "show", "--task", "t1", "--json"); !strings.Contains(show, `"plan_version": 2`) || !strings.Contains(show, `"amendment": {`) {
		t.Fatalf("state while the amendment awaits review:\n%s", show)
	}
	w.Fails(exitConflict, "amendment v3 of plan plan_t1 awaits its review", "plan", "amend", "--task", "t1", "--add", "f_3=x")
	if out := w.Ok("task", "show", "t1"); !strings.Contains(out, "v2 (approved); amendment v3 awaits review") {
		t.Fatalf("task show while the amendment waits:\n%s", out)
	}
	w.OkIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "amend_v3", "--agent", "reviewer", "--file", "-")
	w.Ok("done", "--task", "t1", "--agent", "reviewer", "--output", "reviews/amend_v3.json", "--wait")
	show = w.Ok("state", "show", "--task", "t1", "--json")
	if !strings.Contains(show, `"plan_version": 3`) || strings.Contains(show, `"st_2"`) || strings.Contains(show, `"amendment"`) {
		t.Fatalf("state after the review:\n%s", show)
	}
	if ev := w.Ok("events", "--task", "t1"); !strings.Contains(ev, "plan_amended") || !strings.Contains(ev, "amendment_proposed") {
		t.Fatalf("events:\n%s", ev)
	}
}

// The workspace's plans.amendment_review decides which amendments wait
// for a review, as the daemon read it: "always" holds an addition,
// "never" applies a withdrawal at once.
func TestPlanAmendSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy string
		args   []string
		review bool
	}{
		{"always", []string{"--add", "f_1=more"}, true},
		{"never", []string{"--withdraw", "st_2"}, false},
	} {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			w := newWS(t)
			if err := os.WriteFile(filepath.Join(w.Root, "workspace.json"), []byte(`{"plans":{"amendment_review":"`+c.policy+`"}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			w.serve()
			w.executingCLI("t1", `{"id":"st_1","description":"a"},{"id":"st_2","description":"b"}`)
			var am amendOut
			clitest.Decode(t, w.Ok(append([]string{"plan", "amend", "--task", "t1", "--wait", "--json"}, c.args...)...), &am)
			show := w.Ok("state", "show", "--task", "t1", "--json")
			if am.Review != c.review || strings.Contains(show, `"amendment": {`) != c.review || strings.Contains(show, `"plan_version": 2`) == c.review {
				t.Fatalf("amendment_review %s: %+v\n%s", c.policy, am, show)
			}
		})
	}
	w := newWS(t)
	if err := os.WriteFile(filepath.Join(w.Root, "workspace.json"), []byte(`{"plans":{"amendment_review":"sometimes"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.Run("validate"); r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "amendment_review") {
		t.Fatalf("validate with amendment_review \"sometimes\": %v", r)
	}
}
