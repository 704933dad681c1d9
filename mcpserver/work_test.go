package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// putState writes task t1's state.json as the daemon would, from st with
// the fields every state has filled in.
func putState(t *testing.T, w *files.Store, st workspace.State) {
	t.Helper()
	st.TaskID, st.LastUpdated = "t1", t0
	if st.Phase == "" {
		st.Phase = "planning"
	}
	if st.Subtasks == nil {
		st.Subtasks = map[string]*workspace.SubtaskState{}
	}
	if st.Checkpoints == nil {
		st.Checkpoints = map[string]*workspace.CheckpointState{}
	}
	st.Workers, st.Errors = map[string]*workspace.WorkerState{}, []workspace.StateError{}
	if err := w.WriteJSON("tasks/t1/state.json", st); err != nil {
		t.Fatal(err)
	}
}

// putFile writes a file of the tree as an agent might, bypassing the
// workspace's checks.
func putFile(t *testing.T, w *files.Store, rel, data string) {
	t.Helper()
	p := filepath.Join(w.Dir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustFail checks that a call answered with a tool error containing
// every want.
func mustFail(t *testing.T, text string, isErr bool, want ...string) {
	t.Helper()
	if !isErr {
		if len(text) > 300 {
			text = text[:300] + "..."
		}
		t.Fatalf("no tool error; got %q", text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("error text lacks %q:\n%s", w, text)
		}
	}
}

func TestTaskReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := fixture(t)
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t3", Description: "Build a REST auth API", Context: "Go, no frameworks",
		Constraints: []string{"no new dependencies", "tests first"}, Priority: "high"}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, w, Options{TaskID: "t3", Agent: "planner"})
	var task workspace.Task
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolGetTask, map[string]any{})), &task); err != nil {
		t.Fatal(err)
	}
	if task.ID != "t3" || task.Description != "Build a REST auth API" || task.Context != "Go, no frameworks" ||
		len(task.Constraints) != 2 || task.Constraints[1] != "tests first" || task.Priority != "high" || task.SubmittedBy != "human" {
		t.Fatalf("get_task = %+v", task)
	}

	// The state: a clear tool error until the daemon writes it.
	text, isErr := call(t, cs, ToolGetTaskState, nil)
	mustFail(t, text, isErr, "task t3 has no state yet: the workspace daemon writes it once it has seen the task", "hint: call get_task_state again in a moment")

	cs = connect(t, w, Options{TaskID: "t1", Agent: "planner"})
	putState(t, w, workspace.State{Status: "executing", Phase: "work_in_progress", PlanID: "plan_t1", PlanVersion: 2, PlanStatus: "approved",
		Subtasks: map[string]*workspace.SubtaskState{"st_1": {Status: "in_progress", Worker: "w1", Attempts: 1}, "st_2": {Status: "blocked", BlockedBy: []string{"st_1"}}}})
	var st workspace.State
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolGetTaskState, nil)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "executing" || st.PlanVersion != 2 || st.Subtasks["st_1"].Worker != "w1" || st.Subtasks["st_2"].Status != "blocked" {
		t.Fatalf("get_task_state = %+v", st)
	}

	// The plan: none yet, then two versions, read whole and by version.
	os.Remove(filepath.Join(w.Dir(), "tasks", "t1", "state.json"))
	text, isErr = call(t, cs, ToolGetPlan, nil)
	mustFail(t, text, isErr, "task t1 has no plan yet", "hint: a planner writes it with write_plan")
	for _, summary := range []string{"first", "second"} {
		plan := `{"summary":"` + summary + `","subtasks":[{"id":"st_1","description":"do one"},{"id":"st_2","description":"do two","dependencies":["st_1"],"estimated_complexity":"low"}],"seed":12345678901234567890}`
		if _, err := w.WritePlan(ctx, "t1", "planner", []byte(plan)); err != nil {
			t.Fatal(err)
		}
	}
	got := mustCall(t, cs, ToolGetPlan, map[string]any{})
	if !strings.Contains(got, `"summary":"second"`) || !strings.Contains(got, `"version":2`) || !strings.Contains(got, `"seed":12345678901234567890`) {
		t.Fatalf("get_plan = %s", got)
	}
	if got := mustCall(t, cs, ToolGetPlan, map[string]any{"version": 1}); !strings.Contains(got, `"summary":"first"`) || !strings.Contains(got, `"version":1`) {
		t.Fatalf("get_plan version 1 = %s", got)
	}
	// JSON Schema counts 1.0 as an integer, and so do the tools.
	if got := mustCall(t, cs, ToolGetPlan, json.RawMessage(`{"version":1.0}`)); !strings.Contains(got, `"summary":"first"`) {
		t.Fatalf("get_plan version 1.0 = %s", got)
	}
	if got := mustCall(t, cs, ToolGetPlan, map[string]any{"version": 2}); !strings.Contains(got, `"summary":"second"`) {
		t.Fatalf("get_plan version 2 (the current one) = %s", got)
	}
	text, isErr = call(t, cs, ToolGetPlan, map[string]any{"version": 3})
	mustFail(t, text, isErr, "task t1 has no plan version 3", "hint: call get_plan without version")

	// One subtask: before any state, while the plan awaits review, and
	// once it runs.
	var sub map[string]any
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolGetSubtask, map[string]any{"subtask_id": "st_2"})), &sub); err != nil {
		t.Fatal(err)
	}
	if sub["id"] != "st_2" || sub["description"] != "do two" || sub["estimated_complexity"] != "low" || sub["status"] != nil ||
		!strings.Contains(sub["note"].(string), "no state yet") || sub["plan_version"] != 2.0 {
		t.Fatalf("get_subtask without state = %v", sub)
	}
	putState(t, w, workspace.State{Status: "planning", Phase: "plan_review", PlanID: "plan_t1", PlanVersion: 1, PlanStatus: "proposed"})
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolGetSubtask, map[string]any{"subtask_id": "st_2"})), &sub); err != nil {
		t.Fatal(err)
	}
	if sub["plan_version"] != 1.0 || !strings.Contains(sub["note"].(string), `plan_status is "proposed"`) {
		t.Fatalf("get_subtask while the plan awaits review = %v (want the version the daemon tracks)", sub)
	}
	// The worker's output, written before its subtask is completed (after,
	// it would be final).
	if _, err := w.WriteOutput(ctx, "t1", "st_1", "w1", []byte(`{"summary":"one done","custom":{"lines":120}}`)); err != nil {
		t.Fatal(err)
	}
	putState(t, w, workspace.State{Status: "executing", Phase: "work_in_progress", PlanID: "plan_t1", PlanVersion: 2, PlanStatus: "approved",
		Subtasks: map[string]*workspace.SubtaskState{"st_1": {Status: "completed", Worker: "w1", Attempts: 1, Output: "outputs/st_1.json"}, "st_2": {Status: "pending"}}})
	sub = nil
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolGetSubtask, map[string]any{"subtask_id": "st_1"})), &sub); err != nil {
		t.Fatal(err)
	}
	if sub["status"] != "completed" || sub["worker"] != "w1" || sub["output"] != "outputs/st_1.json" || sub["description"] != "do one" || sub["note"] != nil {
		t.Fatalf("get_subtask of a running plan = %v", sub)
	}
	text, isErr = call(t, cs, ToolGetSubtask, map[string]any{"subtask_id": "st_9"})
	mustFail(t, text, isErr, `plan version 2 of task t1 has no subtask "st_9"`, "hint: call get_plan")

	// Outputs: none yet, then the worker's document as written.
	text, isErr = call(t, cs, ToolGetOutput, map[string]any{"subtask_id": "st_2"})
	mustFail(t, text, isErr, "subtask st_2 of task t1 has no output yet", "hint: call get_subtask")
	if got := mustCall(t, cs, ToolGetOutput, map[string]any{"subtask_id": "st_1"}); !strings.Contains(got, `"summary":"one done"`) || !strings.Contains(got, `"custom":{"lines":120}`) {
		t.Fatalf("get_output = %s", got)
	}

	// Reviews: none, then two in the order they were made.
	if got := mustCall(t, cs, ToolListReviews, nil); got != `{"reviews":[]}` {
		t.Fatalf("list_reviews with none = %s", got)
	}
	putFile(t, w, "tasks/t1/reviews/b_first.json", `{"id":"b_first","type":"plan_review","verdict":"revision_needed","reviewed_at":"2024-01-15T10:01:00Z","issues":[{"problem":"st_2 is vague"}]}`)
	putFile(t, w, "tasks/t1/reviews/a_second.json", `{"id":"a_second","type":"plan_review","verdict":"approved","reviewed_at":"2024-01-15T10:02:00Z","x":1}`)
	var lr struct {
		Reviews    []workspace.Review  `json:"reviews"`
		Unreadable []workspace.Skipped `json:"unreadable"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListReviews, nil)), &lr); err != nil {
		t.Fatal(err)
	}
	if len(lr.Reviews) != 2 || lr.Reviews[0].ID != "b_first" || lr.Reviews[0].Issues[0].Problem != "st_2 is vague" || lr.Reviews[1].Verdict != "approved" || lr.Unreadable != nil {
		t.Fatalf("list_reviews = %+v", lr)
	}
	if got := mustCall(t, cs, ToolGetReview, map[string]any{"review_id": "a_second"}); !strings.Contains(got, `"verdict":"approved"`) || !strings.Contains(got, `"x":1`) {
		t.Fatalf("get_review = %s", got)
	}
	text, isErr = call(t, cs, ToolGetReview, map[string]any{"review_id": "nope"})
	mustFail(t, text, isErr, `task t1 has no review "nope"`, "hint: call list_reviews")
}

// Everything the read tools hand a model was written by some agent: a
// file that is broken, huge, too deep, a symlink, a FIFO or out of shape
// is a tool error saying why, and nothing it points at is read.
func TestReadsRefuseBadFiles(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"subtask_id":"st_1","summary":"SECRET outside the root"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	putFile(t, w, "tasks/t2/outputs/st_1.json", `{"subtask_id":"st_1","summary":"SECRET of task t2"}`)
	putFile(t, w, "tasks/t2/reviews/r.json", `{"id":"r","type":"plan_review","verdict":"approved","notes":"SECRET of task t2"}`)
	t1 := filepath.Join(w.Dir(), "tasks", "t1")
	link := func(target, rel string) func(t *testing.T) {
		return func(t *testing.T) {
			p := filepath.Join(t1, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(p)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	put := func(rel, data string) func(t *testing.T) {
		return func(t *testing.T) { putFile(t, w, "tasks/t1/"+rel, data) }
	}
	bigOutput := `{"subtask_id":"st_1","summary":"` + strings.Repeat("x", 1100<<10) + `"}`
	cases := []struct {
		name  string
		setup func(t *testing.T)
		tool  string
		args  map[string]any
		want  []string
	}{
		{"truncated output", put("outputs/st_1.json", `{"subtask_id":"st_1","summ`), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"outputs/st_1.json"}},
		{"output not an object", put("outputs/st_1.json", `"just text"`), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"schema"}},
		{"output of another subtask", put("outputs/st_1.json", `{"subtask_id":"st_2"}`), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{`holds subtask_id "st_2"`}},
		{"output too large for an answer", put("outputs/st_1.json", bigOutput), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"more than one answer carries"}},
		{"output nested too deep", put("outputs/st_1.json", `{"subtask_id":"st_1","x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"nested deeper than 64"}},
		{"output symlinked to another task", link("../../t2/outputs/st_1.json", "outputs/st_1.json"), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"symlink"}},
		{"output symlinked out of the root", link(secret, "outputs/st_1.json"), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"symlink"}},
		{"outputs/ symlinked to another task's", link("../t2/outputs", "outputs"), ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"not a directory of the task"}},
		{"output a FIFO", func(t *testing.T) {
			p := filepath.Join(t1, "outputs", "st_1.json")
			os.RemoveAll(filepath.Join(t1, "outputs"))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, ToolGetOutput, map[string]any{"subtask_id": "st_1"}, []string{"FIFO"}},
		{"review symlinked to another task", link("../../t2/reviews/r.json", "reviews/r.json"), ToolGetReview, map[string]any{"review_id": "r"}, []string{"symlink"}},
		{"review schema-invalid", put("reviews/q.json", `{"id":"q","type":"plan_review","verdict":"<script>"}`), ToolGetReview, map[string]any{"review_id": "q"}, []string{"schema"}},
		{"reviews/ symlinked to another task's", link("../t2/reviews", "reviews"), ToolListReviews, nil, []string{"reviews/ is not a directory of the task"}},
		{"plan broken", put("plan.json", `{"id":"plan_t1","task_id":"t1","version":1,"subtasks":[`), ToolGetPlan, nil, []string{"plan.json"}},
		{"plan that cannot run", put("plan.json", `{"id":"plan_t1","task_id":"t1","version":1,"subtasks":[{"id":"a","description":"d","dependencies":["a","zz"]}]}`), ToolGetPlan, nil, []string{"unknown zz"}},
		{"plan symlinked out of the root", link(secret, "plan.json"), ToolGetPlan, nil, []string{"symlink"}},
		{"kept plan symlinked", link("../plan.json", "plans/plan_v1.json"), ToolGetPlan, map[string]any{"version": 1}, []string{"symlink"}},
		{"plan for the subtask a symlink", link(secret, "plan.json"), ToolGetSubtask, map[string]any{"subtask_id": "st_1"}, []string{"symlink"}},
		{"state corrupt", put("state.json", `{"task_id":"t1","status":`), ToolGetTaskState, nil, []string{"state.json"}},
		{"state of another shape", put("state.json", `{"task_id":"t1","status":"sleeping"}`), ToolGetTaskState, nil, []string{"state.json"}},
		{"state symlinked out of the root", link(secret, "state.json"), ToolGetTaskState, nil, []string{"symlink"}},
		{"task.json symlinked", func(t *testing.T) {
			os.Rename(filepath.Join(t1, "task.json"), filepath.Join(t1, "task.orig"))
			link("task.orig", "task.json")(t)
		}, ToolGetTask, nil, []string{"symlink"}},
	}
	cs := connect(t, w, Options{TaskID: "t1", Agent: "reader"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			text, isErr := call(t, cs, c.tool, c.args)
			mustFail(t, text, isErr, c.want...)
			if strings.Contains(text, "SECRET") {
				t.Errorf("the answer shows what a link points at:\n%s", text)
			}
			if len(text) > 4000 {
				t.Errorf("error text of %d bytes", len(text))
			}
		})
	}
}

func TestWritePlan(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	cs := connect(t, w, Options{TaskID: "t1", Agent: "planner"})
	plan := json.RawMessage(`{"summary":"two steps","subtasks":[{"id":"st_1","description":"load the grid","estimated_complexity":"low"},
		{"id":"st_2","description":"find the rule","dependencies":["st_1"],"max_retries":1}],
		"checkpoints":[{"id":"cp_1","subtasks":["st_1","st_2"]}],"risks":["the rule may be ambiguous"],"worker_count":2}`)
	got := mustCall(t, cs, ToolWritePlan, plan)
	for _, want := range []string{"Wrote plan.json version 1 (plan plan_t1: 2 subtasks, 1 checkpoint) and proposed it for review (marker tasks/t1/.done.planner.",
		`get_task_state shows plan_status "proposed" at plan_version 1`, "list_reviews", "write_plan"} {
		if !strings.Contains(got, want) {
			t.Errorf("write_plan answer lacks %q:\n%s", want, got)
		}
	}
	p, err := w.ReadPlan(t.Context(), "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.ID != "plan_t1" || p.CreatedBy != "planner" || p.Summary != "two steps" || len(p.Subtasks) != 2 ||
		p.Subtasks[1].MaxRetries != 1 || p.Subtasks[1].Dependencies[0] != "st_1" || p.Checkpoints[0].ID != "cp_1" || p.WorkerCount != 2 {
		t.Fatalf("plan.json = %+v", p)
	}
	dones := markers(t, w, ".done.planner.")
	if len(dones) != 1 || dones[0].OutputFile != "plan.json" || dones[0].AgentID != "planner" || dones[0].Status != "completed" {
		t.Fatalf("markers = %+v", dones)
	}

	// A revision: the next version, the first one kept.
	got = mustCall(t, cs, ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_1", "description": "load and check the grid"}}})
	if !strings.Contains(got, "version 2 (plan plan_t1: 1 subtask)") {
		t.Fatalf("second write_plan: %s", got)
	}
	if !exists(w, "tasks/t1/plans/plan_v1.json") || len(markers(t, w, ".done.planner.")) != 2 {
		t.Fatal("plan_v1.json not kept, or no second marker")
	}

	// Once the plan is approved, or the task finished, no plan is taken:
	// nothing is written.
	for _, c := range []struct {
		st   workspace.State
		want []string
	}{
		{workspace.State{Status: "executing", PlanID: "plan_t1", PlanVersion: 2, PlanStatus: "approved"},
			[]string{"plan plan_t1 v2 of task t1 is approved, and an approved plan is never replaced; nothing was written", "hint: amend the running plan instead"}},
		{workspace.State{Status: "cancelled", PlanStatus: "revision_needed"}, []string{"task t1 is cancelled and takes no plan", "hint: a finished task stays finished"}},
	} {
		putState(t, w, c.st)
		text, isErr := call(t, cs, ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_9", "description": "late"}}})
		mustFail(t, text, isErr, c.want...)
		if p, err := w.ReadPlan(t.Context(), "t1", 0); err != nil || p.Version != 2 {
			t.Fatalf("plan after a refused write: %+v, %v", p, err)
		}
		if n := len(markers(t, w, ".done.planner.")); n != 2 {
			t.Fatalf("%d markers after a refused write, want 2", n)
		}
	}
}

func TestWriteReview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := fixture(t)
	cs := connect(t, w, Options{TaskID: "t1", Agent: "reviewer"})
	for range 2 {
		if _, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[{"id":"st_1","description":"d"}],"checkpoints":[{"id":"cp_1","subtasks":["st_1"]}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Before the daemon has seen the plan, the newest one is judged.
	got := mustCall(t, cs, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "revision_needed",
		"issues": []any{map[string]any{"problem": "st_1 says nothing", "severity": "high", "suggestion": "say what to load"}}, "notes": "close"})
	for _, want := range []string{"Wrote reviews/plan_v2.json (plan_review of plan_t1_v2: revision_needed, 1 issue) and reported it to the workspace daemon (marker tasks/t1/.done.reviewer.",
		`get_task_state shows plan_status "revision_needed": the planner reads this review with list_reviews`} {
		if !strings.Contains(got, want) {
			t.Errorf("write_review answer lacks %q:\n%s", want, got)
		}
	}
	var r workspace.Review
	data, err := os.ReadFile(filepath.Join(w.Dir(), "tasks", "t1", "reviews", "plan_v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "plan_v2" || r.Type != "plan_review" || r.Target != "plan_t1_v2" || r.Reviewer != "reviewer" || r.Verdict != "revision_needed" ||
		len(r.Issues) != 1 || r.Issues[0].Suggestion != "say what to load" || r.Notes != "close" || r.ReviewedAt == nil {
		t.Fatalf("review = %+v", r)
	}
	if strings.Contains(string(data), "review_id") {
		t.Errorf("review_id leaked into the review: %s", data)
	}
	dones := markers(t, w, ".done.reviewer.")
	if len(dones) != 1 || dones[0].OutputFile != "reviews/plan_v2.json" {
		t.Fatalf("markers = %+v", dones)
	}

	// The daemon tracks version 2 awaiting review: that is the plan judged;
	// a taken id gets the next free one.
	putState(t, w, workspace.State{Status: "planning", Phase: "plan_review", PlanID: "plan_t1", PlanVersion: 2, PlanStatus: "proposed"})
	got = mustCall(t, cs, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"})
	if !strings.Contains(got, "Wrote reviews/plan_v2_2.json (plan_review of plan_t1_v2: approved)") || !strings.Contains(got, `plan_status "approved" and status "executing"`) || strings.Contains(got, "Note:") {
		t.Fatalf("second plan review: %s", got)
	}
	text, isErr := call(t, cs, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved", "review_id": "plan_v2"})
	mustFail(t, text, isErr, `review "plan_v2" exists`, "hint: leave review_id out")

	// A plan review when none awaits one is written, with a note.
	putState(t, w, workspace.State{Status: "executing", Phase: "work_in_progress", PlanID: "plan_t1", PlanVersion: 2, PlanStatus: "approved",
		Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "completed"}},
		Checkpoints: map[string]*workspace.CheckpointState{"cp_1": {Status: "awaiting_review"}}})
	got = mustCall(t, cs, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved", "review_id": "late"})
	if !strings.Contains(got, `Note: The state shows plan_status "approved", not "proposed"`) {
		t.Fatalf("late plan review: %s", got)
	}

	// Checkpoints: named, known to the state, judged.
	got = mustCall(t, cs, ToolWriteReview, map[string]any{"type": "checkpoint_review", "verdict": "revision_needed", "target": "cp_1",
		"issues": []any{map[string]any{"problem": "st_1 output is empty"}}})
	if !strings.Contains(got, "Wrote reviews/cp_1_review.json (checkpoint_review of cp_1: revision_needed, 1 issue)") || !strings.Contains(got, `checkpoint cp_1 "revision_needed"`) {
		t.Fatalf("checkpoint review: %s", got)
	}
	text, isErr = call(t, cs, ToolWriteReview, map[string]any{"type": "checkpoint_review", "verdict": "approved", "target": "cp_9"})
	mustFail(t, text, isErr, `task t1 has no checkpoint "cp_9"`, "hint: call get_task_state")

	// An output review is recorded and changes nothing.
	got = mustCall(t, cs, ToolWriteReview, map[string]any{"type": "output_review", "verdict": "approved", "target": "st_1"})
	if !strings.Contains(got, "Wrote reviews/st_1_review.json (output_review of st_1: approved)") || !strings.Contains(got, "changes no state") {
		t.Fatalf("output review: %s", got)
	}
	if n := len(markers(t, w, ".done.reviewer.")); n != 5 {
		t.Fatalf("%d markers, want 5 (one per review written)", n)
	}

	// Without any state a checkpoint cannot be judged.
	os.Remove(filepath.Join(w.Dir(), "tasks", "t1", "state.json"))
	text, isErr = call(t, cs, ToolWriteReview, map[string]any{"type": "checkpoint_review", "verdict": "approved", "target": "cp_1"})
	mustFail(t, text, isErr, "task t1 has no state yet")
}

// Reviewers writing at once never choose one id: every review is kept.
func TestConcurrentReviews(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	cs := connect(t, w, Options{TaskID: "t1", Agent: "reviewer"})
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolWriteReview,
				Arguments: map[string]any{"type": "output_review", "verdict": "approved", "target": "st_1", "notes": strconv.Itoa(i)}})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.IsError:
				errs <- res.Content[0].(*mcp.TextContent).Text
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	reviews, skipped, err := w.ListReviews(t.Context(), "t1")
	if err != nil || len(skipped) != 0 {
		t.Fatalf("ListReviews: %v, skipped %v", err, skipped)
	}
	notes := map[string]bool{}
	for _, r := range reviews {
		notes[r.Notes] = true
	}
	if len(reviews) != n || len(notes) != n {
		t.Fatalf("%d reviews with %d distinct notes, want %d of each: %+v", len(reviews), len(notes), n, reviews)
	}
	if n := len(markers(t, w, ".done.reviewer.")); n != 12 {
		t.Fatalf("%d done markers, want 12", n)
	}
}

// The server's instructions orient a model in the tools it has: memory
// by its name, the task's state by its tool.
func TestInstructions(t *testing.T) {
	t.Parallel()
	_, cs := observer(t)
	got := cs.InitializeResult().Instructions
	for _, want := range []string{`You are agent "observer", working on task "t1" in thread "th_observer"`, "get_task_state", "write_plan", "write_review",
		"store_memory", "scope agent", "It is not the task's state", "list_env_data"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "_state,") || strings.Contains(got, "store_state") || strings.Contains(got, `"po"`) {
		t.Errorf("instructions name memory as state:\n%s", got)
	}
}
