package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// await is poll.Until with the 30 s these tests allow.
func await(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}

// sendPlanBackTwice plays, on any store its daemon serves, the scenario
// that makes the detectors record a repeated_revision: a plan of two
// subtasks sent back twice (the default revision_limit is 2). It returns
// the friction log's entries and the task's friction_recorded events, in
// words that do not depend on the clock.
func sendPlanBackTwice(t *testing.T, st workspace.Store) (entries, events []string) {
	t.Helper()
	ctx := context.Background()
	state := func(cond func(workspace.State) bool) {
		t.Helper()
		await(t, "state of t1", func() (bool, string) {
			s, err := st.ReadState(ctx, "t1")
			return err == nil && cond(s), fmt.Sprintf("%+v %v", s, err)
		})
	}
	if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "task t1"}); err != nil {
		t.Fatal(err)
	}
	plan := []byte(`{"summary":"plan","subtasks":[{"id":"a","description":"a"},{"id":"b","description":"b"}]}`)
	for i := 1; i <= 2; i++ {
		if _, err := st.WritePlan(ctx, "t1", "planner", plan); err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"}); err != nil {
			t.Fatal(err)
		}
		state(func(s workspace.State) bool { return s.PlanStatus == "proposed" && s.PlanVersion == i })
		review := `{"type":"plan_review","verdict":"revision_needed","issues":[{"problem":"missing tests"}]}`
		rel, err := st.WriteReview(ctx, "t1", fmt.Sprintf("plan_v%d", i), "reviewer", []byte(review))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel}); err != nil {
			t.Fatal(err)
		}
		state(func(s workspace.State) bool { return s.RevisionCount == i })
	}
	await(t, "friction_recorded in the events of t1", func() (bool, string) {
		evs, _, err := st.ReadEvents(ctx, "t1")
		if err != nil {
			return false, err.Error()
		}
		events = events[:0]
		for _, e := range evs {
			if e.Name == "friction_recorded" {
				events = append(events, fmt.Sprintf("%s type=%s occurrences=%s new=%s", e.TaskID, e.Attrs["type"], e.Attrs["occurrences"], e.Attrs["new"]))
			}
		}
		return len(events) > 0, fmt.Sprintf("%d events", len(evs))
	})
	list, err := friction.Open(st, "test").List(ctx, friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		entries = append(entries, fmt.Sprintf("%s %s %s %q tasks=%v occurrences=%d pattern=%q action=%q", e.ID, e.Type, e.Status, e.Description, e.AffectedTasks, e.Occurrences, e.Pattern, e.SuggestedAction))
	}
	slices.Sort(entries)
	return entries, events
}

// The daemon on PostgreSQL runs the friction detectors after each commit,
// as the file daemon does: the same markers leave the same friction
// entries and the same friction_recorded events.
func TestServeRecordsFrictionAsOnFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	tree := ws
	d, err := daemon.New(daemon.Config{Store: tree, CleanupInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	fctx, fstop := context.WithCancel(context.Background())
	fdone := make(chan error, 1)
	go func() { fdone <- d.Run(fctx) }()
	wantEntries, wantEvents := sendPlanBackTwice(t, tree)
	fstop()
	if err := <-fdone; err != nil {
		t.Fatal(err)
	}

	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, s, daemon.Config{Lead: workspace.LeadOptions{Holder: "d1"}}) }()
	gotEntries, gotEvents := sendPlanBackTwice(t, s)
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if len(wantEntries) == 0 || !strings.Contains(strings.Join(wantEntries, "\n"), "repeated_revision") {
		t.Fatalf("the file daemon recorded no repeated_revision: %q", wantEntries)
	}
	if !slices.Equal(gotEntries, wantEntries) {
		t.Errorf("friction entries on PostgreSQL:\n%s\non files:\n%s", strings.Join(gotEntries, "\n"), strings.Join(wantEntries, "\n"))
	}
	if !slices.Equal(gotEvents, wantEvents) {
		t.Errorf("friction_recorded events on PostgreSQL %q, on files %q", gotEvents, wantEvents)
	}
}

// Leading, the daemon checks the subtasks in progress for timeouts every
// rescan, and runs retention every cleanup interval.
func TestServeChecksTimeoutsAndRunsRetention(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	setup := lead(t, s, "setup")
	plannedTask(t, s, "slow", 1, setup)
	drop(t, s, "slow", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"})
	commitAll(t, s, "slow", setup)
	agedTask(t, s, "old", "completed", 400*24*time.Hour)
	if err := s.Release(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	// A subtask of unknown complexity counts as medium: it overruns at
	// once.
	tune(s, func(st *workspace.Settings) { st.Friction.TimeoutMedium = workspace.Duration(time.Millisecond) })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, s, daemon.Config{Lead: workspace.LeadOptions{Holder: "d1"}, Rescan: 20 * time.Millisecond, CleanupInterval: 20 * time.Millisecond})
	}()
	await(t, "a timeout friction entry for slow/s0", func() (bool, string) {
		list, err := friction.Open(s, "test").List(ctx, friction.Filter{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range list {
			if e.Type == "timeout" && slices.Equal(e.AffectedTasks, []string{"slow"}) && e.Occurrences == 1 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", list)
	})
	await(t, "the old task removed by retention", func() (bool, string) {
		_, err := s.GetTask(ctx, "old")
		return err != nil, fmt.Sprint(err)
	})
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// Scanned again and again, one overrun is recorded once.
	list, err := friction.Open(s, "test").List(t.Context(), friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Occurrences != 1 {
		t.Fatalf("friction after many rescans: %+v; want one timeout, once", list)
	}
	if _, err := s.GetTask(t.Context(), "slow"); err != nil {
		t.Fatalf("retention removed the task in progress: %v", err)
	}
}
