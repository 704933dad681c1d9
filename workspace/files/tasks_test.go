package files

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

func TestTasksCreateListShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	for _, id := range []string{"b", "a"} {
		if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "do " + id, Priority: "high"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "a", Description: "again"})
	if !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("duplicate id: err = %v, want ErrConflict", err)
	}
	got, err := w.GetTask(ctx, "a")
	if err != nil || got.Description != "do a" || got.SubmittedBy != "human" || !got.CreatedAt.Equal(t0) {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
	if _, err := w.GetTask(ctx, "zz"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("GetTask missing: err = %v, want ErrNotFound", err)
	}
	list, err := w.ListTasks(ctx)
	if err != nil || len(list) != 2 || list[0].Task.ID != "a" || list[1].Task.ID != "b" {
		t.Errorf("ListTasks = %+v, %v", list, err)
	}
	root, err := w.GetThread(ctx, "a", "a")
	if err != nil || root.From != "human" || root.To != "coordinator" || root.ParentID != "" {
		t.Errorf("root thread = %+v, %v", root, err)
	}
	gen, err := w.CreateTask(ctx, workspace.NewTaskRequest{Description: "no id"})
	if err != nil || !strings.HasPrefix(gen.ID, "task_") {
		t.Errorf("generated id = %q, %v", gen.ID, err)
	}
}

func TestPlanVersioning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := newWS(t)
	newTask(t, w, "t1")
	p1, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"summary":"first","subtasks":[{"id":"st_1","description":"x"}],"extra":{"kept":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p1.Version != 1 || p1.TaskID != "t1" || p1.CreatedBy != "planner" {
		t.Errorf("v1 = %+v", p1)
	}
	v1bytes, _ := os.ReadFile(filepath.Join(w.Dir(), "tasks/t1/plan.json"))
	if !strings.Contains(string(v1bytes), `"kept": true`) {
		t.Errorf("a field the agent wrote was dropped: %s", v1bytes)
	}
	c.advance(time.Minute)
	p2, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"summary":"second","subtasks":[{"id":"st_1","description":"x"},{"id":"st_2","description":"y","dependencies":["st_1"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p2.Version != 2 || len(p2.Subtasks) != 2 {
		t.Errorf("v2 = %+v", p2)
	}
	kept, err := os.ReadFile(filepath.Join(w.Dir(), "tasks/t1/plans/plan_v1.json"))
	if err != nil || string(kept) != string(v1bytes) {
		t.Errorf("plans/plan_v1.json = %q, %v; want the v1 bytes", kept, err)
	}
	for _, tc := range []struct {
		name    string
		version int
		summary string
	}{{"current", 0, "second"}, {"v2", 2, "second"}, {"v1", 1, "first"}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := w.ReadPlan(ctx, "t1", tc.version)
			if err != nil || p.Summary != tc.summary {
				t.Errorf("ReadPlan(%d) = %+v, %v", tc.version, p, err)
			}
		})
	}
	if _, err := w.ReadPlan(ctx, "t1", 9); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("ReadPlan(9): err = %v, want ErrNotFound", err)
	}
	if _, err := w.WritePlan(ctx, "nope", "planner", []byte(`{"subtasks":[]}`)); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("plan of a missing task: err = %v, want ErrNotFound", err)
	}
}

func TestOutputsAndReviews(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	rel, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"done <ok>","subtask_id":"st_1"}`))
	if err != nil || rel != "outputs/st_1.json" {
		t.Fatalf("WriteOutput = %q, %v", rel, err)
	}
	p, err := w.ReadProduct(t.Context(), "t1", rel)
	if err != nil || p.Output == nil || p.Output.SubtaskID != "st_1" || p.Output.WorkerID != "worker_1" || p.Output.Summary != "done <ok>" {
		t.Errorf("ReadProduct(output) = %+v, %v", p, err)
	}
	rel, err = w.WriteReview(t.Context(), "t1", "plan_v1", "reviewer", []byte(`{"type":"plan_review","verdict":"approved"}`))
	if err != nil || rel != "reviews/plan_v1.json" {
		t.Fatalf("WriteReview = %q, %v", rel, err)
	}
	p, err = w.ReadProduct(t.Context(), "t1", rel)
	if err != nil || p.Review == nil || p.Review.Reviewer != "reviewer" || p.Review.Verdict != "approved" || p.Review.ReviewedAt == nil {
		t.Errorf("ReadProduct(review) = %+v, %v", p, err)
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := newWS(t)
	newTask(t, w, "t1")
	newTask(t, w, "t2")
	c.advance(time.Second)
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_a", From: "coordinator", To: "solver", Message: "solve it"}); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_b", ParentID: "th_a", From: "solver", To: "observer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_b", From: "x", To: "y"}); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("duplicate thread: err = %v, want ErrConflict", err)
	}
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_c", ParentID: "t2", From: "x", To: "y"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("parent in another task: err = %v, want ErrNotFound", err)
	}
	list, err := w.ListThreads(ctx, "t1")
	if err != nil || len(list) != 3 || list[0].ID != "t1" || list[2].ID != "th_b" {
		t.Errorf("ListThreads = %v, %v", list, err)
	}
	if task, err := w.ResolveThread(ctx, "th_b"); err != nil || task != "t1" {
		t.Errorf("ResolveThread = %q, %v", task, err)
	}
	c.advance(time.Second)
	u, err := w.UpdateThread(ctx, "t1", "th_a", "solver", workspace.ThreadUpdate{Progress: ptr("half"), Buffers: &[]string{"env:arc_task"}})
	if err != nil || u.Progress != "half" || u.Message != "solve it" || len(u.Buffers) != 1 || !u.UpdatedAt.Equal(t0.Add(3*time.Second)) {
		t.Errorf("UpdateThread = %+v, %v", u, err)
	}
}

func TestMarkers(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	newTask(t, w, "t2")
	seen := map[string]bool{}
	for range 20 {
		name, err := w.WriteClaim(t.Context(), "t1", "worker.1", "st_1")
		if err != nil {
			t.Fatal(err)
		}
		if seen[name] {
			t.Fatalf("marker name %s reused", name)
		}
		seen[name] = true
		if kind, ok := workspace.IsMarkerName(filepath.Base(name)); !ok || kind != workspace.KindClaim {
			t.Errorf("IsMarkerName(%s) = %s, %v", name, kind, ok)
		}
	}
	if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "w", []byte(`{"summary":"ok"}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), "tasks/t1/outputs/st_bad.json"), []byte(`{"subtask_id": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), "tasks/t1/outputs/st_wrong.json"), []byte(`{"subtask_id": "st_1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.Dir(), "tasks/t1/outputs/st_1.json"), filepath.Join(w.Dir(), "tasks/t1/outputs/st_link.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteOutput(t.Context(), "t2", "st_9", "w", []byte(`{"summary":"ok"}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../t2/outputs", filepath.Join(w.Dir(), "tasks/t1/reviews")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		output string
		want   error
	}{
		{"missing", "outputs/st_2.json", workspace.ErrNotFound},
		{"schema invalid", "outputs/st_bad.json", workspace.ErrInvalid},
		{"wrong subtask", "outputs/st_wrong.json", workspace.ErrInvalid},
		{"symlink", "outputs/st_link.json", workspace.ErrUnsafe},
		{"outside the task", "../t2/outputs/st_9.json", workspace.ErrInvalid},
		{"absolute", "/etc/passwd", workspace.ErrInvalid},
		{"deeper", "outputs/x/st_1.json", workspace.ErrInvalid},
		{"symlinked directory", "reviews/st_9.json", workspace.ErrUnsafe},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			refuses(t, w, tc.want, "", func() error {
				_, err := w.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w", OutputFile: tc.output})
				return err
			})
		})
	}
	name, err := w.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w", OutputFile: "outputs/st_1.json"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := w.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var m workspace.Marker
	if err := json.Unmarshal(data, &m); err != nil || m.SubtaskID != "st_1" || m.Status != "completed" || m.CompletedAt == nil {
		t.Errorf("done marker = %+v, %v", m, err)
	}
}
