package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// Friction the detectors find while markers are applied is recorded in the
// log and announced as friction_recorded in the task's events.
func TestFrictionRecordedByDetectors(t *testing.T) {
	dir, ws := newWorkspace(t)
	prepare(t, ws, "t1", 2) // a plan of 2 subtasks, proposed
	startDaemon(t, dir, Config{CleanupInterval: -1})
	// Send the plan back twice: the default revision_limit is 2.
	for i := 1; i <= 2; i++ {
		awaitState(t, ws, "t1", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
		review := `{"type":"plan_review","verdict":"revision_needed","issues":[{"problem":"missing tests"}]}`
		rel, err := ws.WriteReview("t1", fmt.Sprintf("plan_v%d", i), "reviewer", []byte(review))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WriteDone(workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel}); err != nil {
			t.Fatal(err)
		}
		want := i
		awaitState(t, ws, "t1", func(st workspace.State) bool { return st.RevisionCount == want })
		if i < 2 {
			if _, err := ws.WritePlan(t.Context(), "t1", "planner", []byte(`{"subtasks":[{"id":"a","description":"a"},{"id":"b","description":"b"}]}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.WriteDone(workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var id string
	await(t, "a repeated_revision friction entry", func() (bool, string) {
		entries, err := ws.FrictionLog("test").List(friction.Filter{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range entries {
			if e.Type == "repeated_revision" {
				id = e.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d entries", len(entries))
	})
	await(t, "friction_recorded in events.log", func() (bool, string) {
		evs, _, err := ws.ReadEvents("t1")
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, e := range evs {
			if e.Name == "friction_recorded" && len(e.Args) == 1 && e.Args[0] == id && e.Attrs["type"] == "repeated_revision" {
				return true, ""
			}
			names = append(names, e.Name)
		}
		return false, strings.Join(names, " ")
	})
}
