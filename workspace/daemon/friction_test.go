package daemon_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// Friction the detectors find while markers are applied is recorded in the
// log and announced as friction_recorded in the task's events.
func TestFrictionRecordedByDetectors(t *testing.T) {
	// With each of the tree's wake-up sources.
	for _, w := range []workspace.WakeOptions{{Mode: "inotify"}, {Mode: "poll", Interval: 20 * time.Millisecond}} {
		t.Run(w.Mode, func(t *testing.T) { testFrictionRecordedByDetectors(t, w) })
	}
}

func testFrictionRecordedByDetectors(t *testing.T, wake workspace.WakeOptions) {
	dir := t.TempDir()
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := fixture.PrepareTask(t.Context(), ws, "t1", 2); err != nil { // a plan of 2 subtasks, proposed
		t.Fatal(err)
	}
	servetest.StartTree(t, dir, 0, daemon.Config{Wake: wake})
	// Send the plan back twice: the default revision_limit is 2.
	for i := 1; i <= 2; i++ {
		awaitState(t, ws, "t1", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
		review := `{"type":"plan_review","verdict":"revision_needed","issues":[{"problem":"missing tests"}]}`
		rel, err := ws.WriteReview(t.Context(), "t1", fmt.Sprintf("plan_v%d", i), "reviewer", []byte(review))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel}); err != nil {
			t.Fatal(err)
		}
		want := i
		awaitState(t, ws, "t1", func(st workspace.State) bool { return st.RevisionCount == want })
		if i < 2 {
			if _, err := ws.WritePlan(t.Context(), "t1", "planner", []byte(`{"subtasks":[{"id":"a","description":"a"},{"id":"b","description":"b"}]}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var id string
	await(t, "a repeated_revision friction entry", func() (bool, string) {
		entries, err := friction.Open(ws, "test").List(t.Context(), friction.Filter{})
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
		evs, _, err := ws.ReadEvents(t.Context(), "t1")
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

// await is poll.Until with the 30 s these tests allow.
func await(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}

// awaitState is poll.State with the 30 s these tests allow.
func awaitState(t *testing.T, ws *files.Store, id string, cond func(workspace.State) bool) workspace.State {
	t.Helper()
	return poll.State(t, 30*time.Second, ws, id, cond)
}
