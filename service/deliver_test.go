package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// serve runs the real daemon in-process over its own opening of r, as a
// daemon in another process would serve it.
func serve(t *testing.T, r string) {
	t.Helper()
	st, err := service.Open(context.Background(), r, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	served, wake, err := service.Serve(st, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	servetest.Start(t, served, daemon.Config{Rescan: time.Second, Wake: wake})
}

const plan = `{"summary": "deliver", "subtasks": [{"id": "s1", "description": "the one piece of work"}]}`

// TestDeliver: the one way a door writes a product, drops its done marker
// and waits for the verdict, on a tree and on SQLite, with a daemon
// serving and without one, and a marker refused after its product was
// written.
func TestDeliver(t *testing.T) {
	t.Parallel()
	for _, k := range kinds[:2] {
		t.Run(k.name, func(t *testing.T) {
			ctx := t.Context()
			r := root(t, k.kind)
			st, err := service.Open(ctx, r, service.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, id := range []string{"queued", "served", "refused"} {
				if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "deliver " + id}); err != nil {
					t.Fatal(err)
				}
			}
			writePlan := func(task string) func(context.Context) (string, error) {
				return func(ctx context.Context) (string, error) {
					_, err := st.WritePlan(ctx, task, "planner", []byte(plan))
					return "plan.json", err
				}
			}
			wait := service.DeliverOptions{Wait: 20 * time.Second}

			// No daemon: the marker is dropped and queued, no error.
			d, err := service.Deliver(ctx, st, workspace.DoneRequest{TaskID: "queued", Agent: "planner"}, writePlan("queued"), wait)
			if err != nil {
				t.Fatal(err)
			}
			if d.Product != "plan.json" || d.Marker == "" || d.Stands != service.Queued {
				t.Fatalf("without a daemon: %+v, want plan.json, a marker, queued", d)
			}

			serve(t, r)
			// The daemon takes the queued marker and then the new one.
			d, err = service.Deliver(ctx, st, workspace.DoneRequest{TaskID: "served", Agent: "planner"}, writePlan("served"), wait)
			if err != nil {
				t.Fatal(err)
			}
			if d.Stands != service.Decided || d.Verdict.Verdict != workspace.VerdictApplied || d.Verdict.TaskID != "served" {
				t.Fatalf("with a daemon: %+v, want the verdict applied", d)
			}
			s, err := st.ReadState(ctx, "served")
			if err != nil || s.PlanStatus != "proposed" || s.PlanVersion != 1 || s.JournalSeq <= d.After {
				t.Fatalf("state after the verdict: %+v, %v; want plan v1 proposed past seq %d", s, err, d.After)
			}

			// A claim is judged: won by the first, lost by the second.
			if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: "claimed", Description: "claims"}); err != nil {
				t.Fatal(err)
			}
			approve(t, st, "claimed")
			won, err := service.Claim(ctx, st, "claimed", "w1", "s1", wait)
			if err != nil || won.Stands != service.Decided || won.Verdict.Verdict != workspace.VerdictWon {
				t.Fatalf("first claim: %+v, %v; want won", won, err)
			}
			lost, err := service.Claim(ctx, st, "claimed", "w2", "s1", wait)
			if err != nil || lost.Stands != service.Decided || lost.Verdict.Verdict != workspace.VerdictLost || lost.Verdict.Worker != "w1" {
				t.Fatalf("second claim: %+v, %v; want lost to w1", lost, err)
			}
			c, err := service.Cancel(ctx, st, "claimed", "human", "not needed", wait)
			if err != nil || c.Stands != service.Decided || c.Verdict.Verdict != workspace.VerdictApplied || c.Verdict.TaskStatus != "cancelled" {
				t.Fatalf("cancel: %+v, %v; want applied, the task cancelled", c, err)
			}

			// Without a wait nothing is waited for.
			d, err = service.Deliver(ctx, st, workspace.DoneRequest{TaskID: "queued", Agent: "planner"}, writePlan("queued"), service.DeliverOptions{})
			if err != nil || d.Marker == "" || d.Stands != "" {
				t.Fatalf("without a wait: %+v, %v", d, err)
			}

			// A marker the workspace refuses after the product is written:
			// the product stays, the error says so.
			_, err = service.Deliver(ctx, st, workspace.DoneRequest{TaskID: "refused", Agent: "planner", Status: "bogus"}, writePlan("refused"), wait)
			var me *service.MarkerError
			if !errors.As(err, &me) || me.Product != "plan.json" || !errors.Is(err, workspace.ErrInvalid) {
				t.Fatalf("refused marker: %v, want a *MarkerError for plan.json wrapping ErrInvalid", err)
			}
			if _, err := st.ReadPlan(ctx, "refused", 0); err != nil {
				t.Errorf("the product of a refused marker is gone: %v", err)
			}

			// A product that cannot be written drops no marker.
			bad := func(ctx context.Context) (string, error) {
				_, err := st.WritePlan(ctx, "refused", "planner", []byte(`{"subtasks": "none"}`))
				return "plan.json", err
			}
			d, err = service.Deliver(ctx, st, workspace.DoneRequest{TaskID: "refused", Agent: "planner"}, bad, wait)
			if err == nil || errors.As(err, new(*service.MarkerError)) || d.Marker != "" {
				t.Fatalf("a bad product: %+v, %v; want its own error and no marker", d, err)
			}
		})
	}
}

// approve proposes a one-subtask plan for task and approves it, both
// through Deliver, waiting for each verdict.
func approve(t *testing.T, st workspace.Store, task string) {
	t.Helper()
	ctx := t.Context()
	wait := service.DeliverOptions{Wait: 20 * time.Second}
	d, err := service.Deliver(ctx, st, workspace.DoneRequest{TaskID: task, Agent: "planner"}, func(ctx context.Context) (string, error) {
		_, err := st.WritePlan(ctx, task, "planner", []byte(plan))
		return "plan.json", err
	}, wait)
	if err != nil || d.Verdict.Verdict != workspace.VerdictApplied {
		t.Fatalf("propose: %+v, %v", d, err)
	}
	review := []byte(`{"type": "plan_review", "target": "plan", "verdict": "approved", "reviewer": "reviewer"}`)
	d, err = service.Deliver(ctx, st, workspace.DoneRequest{TaskID: task, Agent: "reviewer"}, func(ctx context.Context) (string, error) {
		return st.WriteReview(ctx, task, "r1", "reviewer", review)
	}, wait)
	if err != nil || d.Verdict.Verdict != workspace.VerdictApplied || d.Verdict.TaskStatus != "executing" {
		t.Fatalf("approve: %+v, %v", d, err)
	}
}
