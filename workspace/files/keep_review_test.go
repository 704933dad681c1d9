package files

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// A review can be rewritten until a done marker reports it; the version it
// replaces is kept. Once reported — a marker waiting, or a journaled
// record the daemon did not reject — it is final.
func TestReviewFinalOnceReported(t *testing.T) {
	t.Parallel()
	review := `{"type":"plan_review","verdict":"approved"}`
	rec := func(seq int, output, rejected string) string {
		r := workspace.JournalRecord{Seq: int64(seq), TakenAt: t0, File: ".done.reviewer.x", Kind: workspace.KindDone,
			Marker: workspace.Marker{AgentID: "reviewer", OutputFile: output}, Rejected: rejected}
		data, _ := json.Marshal(r)
		return string(data)
	}
	cases := []struct {
		name  string
		files map[string]string
		final string // what the refusal says; "" when the rewrite is allowed
	}{
		{"never reported", nil, ""},
		{"a marker reports another review", map[string]string{".done.reviewer.x1": `{"agent_id":"reviewer","output_file":"reviews/other.json"}`}, ""},
		{"the daemon rejected its marker", map[string]string{"journal/000000000001.json": rec(1, "reviews/r1.json", "schema-invalid")}, ""},
		{"a claim record", map[string]string{"journal/000000000001.json": `{"seq":1,"kind":"claim","file":".claim.w","marker":{"agent_id":"w","output_file":"reviews/r1.json"}}`}, ""},
		{"a marker waits", map[string]string{".done.reviewer.x1": `{"agent_id":"reviewer","output_file":"reviews/r1.json"}`},
			"done marker .done.reviewer.x1 reported it"},
		{"journaled alone", map[string]string{"journal/000000000001.json": rec(1, "reviews/r1.json", "")},
			"it was reported (journal record 1)"},
		{"journaled in a chunk", map[string]string{"journal/000000000002-000000000004.json": `{"records":[` + rec(2, "plan.json", "") + "," + rec(3, "reviews/r1.json", "") + "," + rec(4, "outputs/a.json", "") + `]}`},
			"it was reported (journal record 3)"},
		{"taken, not yet recorded", map[string]string{"journal/000000000009.taken.done.reviewer.x": `{"agent_id":"reviewer","output_file":"reviews/r1.json"}`},
			"it was reported (journal record 9)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			if _, err := w.WriteReview(t.Context(), "t1", "r1", "reviewer", []byte(review)); err != nil {
				t.Fatal(err)
			}
			first := readKept(t, w, "reviews/r1.json")
			for rel, data := range c.files {
				putFile(t, w, rel, data)
			}
			holdLockFile(t, w)
			again := []byte(`{"type":"plan_review","verdict":"revision_needed"}`)
			if c.final == "" {
				if _, err := w.WriteReview(t.Context(), "t1", "r1", "reviewer", again); err != nil {
					t.Fatalf("rewrite refused: %v", err)
				}
				if got := readKept(t, w, "reviews/history/r1.v1.json"); got != first {
					t.Errorf("kept %s, want the review replaced: %s", got, first)
				}
				return
			}
			var err error
			refuses(t, w, workspace.ErrConflict, "", func() error {
				_, err = w.WriteReview(t.Context(), "t1", "r1", "reviewer", again)
				return err
			})
			if !strings.Contains(err.Error(), c.final) || !strings.Contains(workspace.HintOf(err), "new id") {
				t.Errorf("err = %v (hint %q), want it to say %q and hint at a new id", err, workspace.HintOf(err), c.final)
			}
		})
	}
}

// A journal that cannot be read leaves no way to know whether a review was
// reported: the write is refused rather than guessed.
func TestReviewUnreadableJournalRefuses(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"not JSON":    "{",
		"wrong shape": `{"records": 7}`,
	} {
		t.Run(name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			putFile(t, w, "journal/000000000001.json", data)
			_, err := w.WriteReview(t.Context(), "t1", "r1", "reviewer", []byte(`{"type":"plan_review","verdict":"approved"}`))
			if err == nil || !strings.Contains(err.Error(), "whether it was reported") {
				t.Errorf("err = %v, want a refusal naming the journal", err)
			}
			if _, err := os.Stat(taskFile(w, "reviews/r1.json")); !os.IsNotExist(err) {
				t.Errorf("the review was written: %v", err)
			}
		})
	}
}

func TestReviewContradictionsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, agent, body string
		want              []string
	}{
		{"other id", "reviewer", `{"id":"r2","type":"plan_review","verdict":"approved"}`, []string{`id "r2"`, `"r1"`}},
		{"other reviewer", "reviewer", `{"reviewer":"mallory","type":"plan_review","verdict":"approved"}`, []string{`reviewer "mallory"`, `"reviewer"`}},
		{"id not a string", "", `{"id":["r1"],"type":"plan_review","verdict":"approved"}`, []string{`id ["r1"]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			var err error
			refuses(t, w, workspace.ErrInvalid, "", func() error {
				_, err = w.WriteReview(t.Context(), "t1", "r1", c.agent, []byte(c.body))
				return err
			})
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to name %s", err, s)
				}
			}
		})
	}
	// Without an agent the body's reviewer stands.
	w, _ := newWS(t)
	newTask(t, w, "t1")
	if _, err := w.WriteReview(t.Context(), "t1", "r1", "", []byte(`{"reviewer":"alice","type":"plan_review","verdict":"approved"}`)); err != nil {
		t.Fatal(err)
	}
	if p, err := w.ReadProduct(t.Context(), "t1", "reviews/r1.json"); err != nil || p.Review.Reviewer != "alice" {
		t.Errorf("review = %+v, %v; want reviewer alice", p.Review, err)
	}
}

// A plan.json changed by hand to claim a version already kept with other
// content is refused rather than allowed to replace that version.
func TestPlanKeptVersionNeverReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	plan := []byte(`{"subtasks":[{"id":"a","description":"a"}]}`)
	for range 2 {
		if _, err := w.WritePlan(ctx, "t1", "planner", plan); err != nil {
			t.Fatal(err)
		}
	}
	v1 := readKept(t, w, "plans/plan_v1.json")
	// plan.json (v2) rewritten by hand as another "version 1".
	edited := strings.Replace(readKept(t, w, "plan.json"), `"version": 2`, `"version": 1`, 1)
	edited = strings.Replace(edited, `"description": "a"`, `"description": "edited"`, 1)
	putFile(t, w, "plan.json", edited)
	_, err := w.WritePlan(ctx, "t1", "planner", plan)
	if !errors.Is(err, workspace.ErrConflict) || !strings.Contains(err.Error(), "plans/plan_v1.json already keeps another version 1") {
		t.Fatalf("err = %v, want a conflict naming plans/plan_v1.json", err)
	}
	if got := readKept(t, w, "plans/plan_v1.json"); got != v1 {
		t.Errorf("plans/plan_v1.json changed")
	}
	_, err = w.WritePlan(ctx, "t1", "planner", []byte(`{"task_id":"t9","subtasks":[]}`))
	if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), `task_id "t9"`) {
		t.Errorf("plan for another task: err = %v, want it refused naming t9", err)
	}
}

// A done marker finishing one subtask with another's output is refused
// before it is dropped: it would leave that output looking finished.
func TestDoneNamesItsSubtasksOutput(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var err error
	refuses(t, w, workspace.ErrInvalid, "", func() error {
		_, err = w.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: "outputs/st_1.json", SubtaskID: "st_2"})
		return err
	})
	if !strings.Contains(err.Error(), "the marker names subtask st_2, but outputs/st_1.json is subtask st_1's output") || workspace.FieldOf(err) != workspace.FieldOutputFile {
		t.Errorf("err = %v (field %q)", err, workspace.FieldOf(err))
	}
	if _, err := w.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: "outputs/st_1.json", SubtaskID: "st_1"}); err != nil {
		t.Errorf("its own output: %v", err)
	}
}
