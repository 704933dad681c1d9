package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// binaryVersion is the version the built binary prints: the server under
// test is that binary, not this test's (a build from a clean checkout is
// stamped with its commit's version; a command run in-process is not).
func binaryVersion(t *testing.T) string {
	t.Helper()
	out, err := clitest.Command("version").Output()
	if f := strings.Fields(string(out)); err == nil && len(f) > 1 {
		return f[1]
	}
	t.Fatalf("workspaced version: %v (%q)", err, out)
	return ""
}

// TestMCPRealClient starts `workspaced mcp` as a subprocess and talks to it
// with the go-sdk client over the command's stdin/stdout, as an MCP client
// that launches the server does.
func TestMCPRealClient(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("thread", "new", "--task", "t1", "--id", "th_solver", "--from", "coordinator", "--to", "solver", "--message", "solve it")
	w.Ok("thread", "new", "--task", "t1", "--id", "th_observer", "--parent", "th_solver", "--from", "solver", "--to", "observer", "--message", "patterns?")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := clitest.Command("--root", w.Root, "mcp", "--thread", "th_observer", "--agent", "observer")
	cmd.Dir, cmd.Env = w.Dir, clitest.CleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "workspaced-test", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
	}()

	// The server reports the binary's version, as 'workspaced version'
	// prints it.
	if v, want := cs.InitializeResult().ServerInfo.Version, binaryVersion(t); v != want {
		t.Errorf("serverInfo.version = %q, want %q", v, want)
	}
	listsEveryTool(t, cs)

	callText := func(name string, args any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	store := map[string]any{"key": "arc_task", "short_description": "The current ARC puzzle: training-001.",
		"value": map[string]any{"task_id": "training-001", "input_grid": [][]int{{0, 1}, {2, 3}}}}
	if got, isErr := callText("store_env_data", store); isErr || got != "Stored 'arc_task' in environment data (version 1)." {
		t.Fatalf("store: %q (error %v)", got, isErr)
	}
	got, isErr := callText("list_env_data", map[string]any{})
	var items []workspace.ManifestItem
	if isErr || json.Unmarshal([]byte(got), &items) != nil || len(items) != 1 || items[0].Key != "arc_task" || items[0].StoredBy != "observer" {
		t.Fatalf("list: %q (error %v)", got, isErr)
	}
	if got, isErr := callText("get_env_data", map[string]any{"key": "arc_task"}); isErr || got != `{"input_grid":[[0,1],[2,3]],"task_id":"training-001"}` {
		t.Fatalf("get: %q (error %v)", got, isErr)
	}
	// A bad call is a tool error with the CLI's text, and the server goes on.
	if got, isErr := callText("get_env_data", map[string]any{"key": "nope"}); !isErr || !strings.Contains(got, "no such key\nhint: ") {
		t.Fatalf("get of a missing key: %q (error %v)", got, isErr)
	}
	if got, isErr := callText("store_memory", map[string]any{"key": "seen", "value": []string{"arc_task"}, "scope": "session"}); isErr {
		t.Fatalf("store_memory: %s", got)
	}

	// The tree: the entries as any other reader sees them.
	data, err := os.ReadFile(filepath.Join(w.Root, "tasks", "t1", "env", "arc_task.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e workspace.Entry
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if e.StoredBy != "observer" || e.Version != 1 || e.ShortDescription != "The current ARC puzzle: training-001." {
		t.Fatalf("entry = %+v", e)
	}
	if out := w.Ok("env", "get", "--task", "t1", "--key", "arc_task"); !strings.Contains(out, `"training-001"`) {
		t.Fatalf("env get via the CLI: %s", out)
	}
	if out := w.Ok("memory", "get", "--scope", "session", "--thread", "th_observer", "--key", "seen"); !strings.Contains(out, `"arc_task"`) {
		t.Fatalf("memory get via the CLI: %s", out)
	}
	w.Ok("validate")

	// Closing the client closes the server's stdin: it exits 0.
	closed = true
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("server exit: %v (stderr: %s)", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "serving task t1, thread th_observer, as agent observer") {
		t.Fatalf("stderr: %q", stderr.String())
	}
}

// TestMCPStartErrors: bad flags and ids are refused before serving, with
// the CLI's exit codes.
func TestMCPStartErrors(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Task("t2")
	w.Ok("thread", "new", "--task", "t2", "--id", "th_two", "--from", "coordinator", "--to", "solver", "--message", "m")
	cases := []failCase{
		{"no agent", exitUsage, "missing --agent", []string{"mcp", "--task", "t1"}},
		{"positional argument", exitUsage, "unexpected argument", []string{"mcp", "--task", "t1", "--agent", "a", "extra"}},
		{"bad agent id", exitFailure, `agent "a/b"`, []string{"mcp", "--task", "t1", "--agent", "a/b"}},
		{"bad task id", exitFailure, `task id "../t1"`, []string{"mcp", "--task", "../t1", "--agent", "a"}},
		{"unknown task", exitNotFound, "t9", []string{"mcp", "--task", "t9", "--agent", "a"}},
		{"unknown thread", exitNotFound, "th_nope", []string{"mcp", "--thread", "th_nope", "--agent", "a"}},
		{"thread of another task", exitNotFound, "th_two", []string{"mcp", "--task", "t1", "--thread", "th_two", "--agent", "a"}},
	}
	failsWithHints(t, w, cases)
	t.Run("not a workspace", func(t *testing.T) {
		w.T = t
		w.Fails(exitNotFound, "neither workspace.json nor tasks/", "--root", t.TempDir(), "mcp", "--task", "t1", "--agent", "a")
	})
	t.Run("help", func(t *testing.T) {
		w.T = t
		out := w.Ok("mcp", "--help")
		for _, s := range append(mcpserver.ToolNames(), "Usage:", "Examples:", "Exit codes:") {
			if !strings.Contains(out, s) {
				t.Errorf("help lacks %q", s)
			}
		}
	})
}

// failCase is a command line that must fail: its exit code and what
// its error names.
type failCase struct {
	name string
	code int
	want string
	args []string
}

// failsWithHints runs each case as a subtest on w: it must fail as
// clitest's Fails checks, with a hint.
func failsWithHints(t *testing.T, w *ws, cases []failCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.T = t
			r := w.Fails(c.code, c.want, c.args...)
			if !strings.Contains(r.Stderr, "hint: ") {
				t.Errorf("no hint: %v", r)
			}
		})
	}
}

// listsEveryTool fails t unless the session lists every tool of
// mcpserver, and no other.
func listsEveryTool(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tools.Tools))
	for i, tl := range tools.Tools {
		names[i] = tl.Name
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(mcpserver.ToolNames())); !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
}

// mcpAgent is one `workspaced mcp` process and the go-sdk client talking
// to it, as an agent runtime launches it.
type mcpAgent struct {
	t      testing.TB
	name   string
	cs     *mcp.ClientSession
	stderr *clitest.Log
}

// mcpClient launches `workspaced mcp --task task --agent agent` on w.
func (w *ws) mcpClient(task, agent string) *mcpAgent {
	w.T.Helper()
	cmd := clitest.Command("--root", w.Root, "mcp", "--task", task, "--agent", agent)
	cmd.Dir, cmd.Env = w.Dir, clitest.CleanEnv()
	a := &mcpAgent{t: w.T, name: agent, stderr: &clitest.Log{}}
	cmd.Stderr = a.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "workspaced-test-" + agent, Version: "v0"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		w.T.Fatalf("connect %s: %v (stderr: %s)", agent, err, a.stderr)
	}
	a.cs = cs
	w.T.Cleanup(func() { cs.Close() })
	return a
}

// call calls a tool that must succeed and returns its text.
func (a *mcpAgent) call(tool string, args any) string {
	a.t.Helper()
	text, isErr := a.try(tool, args)
	if isErr {
		a.t.Fatalf("%s: %s(%v): tool error: %s", a.name, tool, args, text)
	}
	return text
}

// try calls a tool and returns its text and whether it is a tool error.
func (a *mcpAgent) try(tool string, args any) (string, bool) {
	a.t.Helper()
	res, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("%s: %s: protocol error: %v (stderr: %s)", a.name, tool, err, a.stderr)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.(*mcp.TextContent).Text)
	}
	return strings.Join(parts, "\n"), res.IsError
}

// state waits, through get_task_state, for the task's state to satisfy
// cond, as an agent would.
func (a *mcpAgent) state(what string, cond func(workspace.State) bool) workspace.State {
	a.t.Helper()
	var st workspace.State
	clitest.Eventually(a.t, what, func() (bool, string) {
		text, isErr := a.try(mcpserver.ToolGetTaskState, nil)
		if isErr {
			return false, text
		}
		st = workspace.State{}
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			return false, err.Error()
		}
		return cond(st), text
	})
	return st
}

// TestMCPPlannerReviewerFlow runs a task from plan to completion with
// agents that have nothing but MCP tools — a planner, a reviewer and a
// worker, each its own `workspaced mcp` — against a running daemon.
func TestMCPPlannerReviewerFlow(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "Build a REST auth API", "--context", "Go service, no frameworks",
		"--constraint", "no new dependencies", "--constraint", "tests first")
	w.serve()
	planner, reviewer, worker := w.mcpClient("t1", "planner"), w.mcpClient("t1", "reviewer"), w.mcpClient("t1", "worker")

	// The planner reads the task and proposes a plan.
	var task workspace.Task
	if err := json.Unmarshal([]byte(planner.call(mcpserver.ToolGetTask, nil)), &task); err != nil {
		t.Fatal(err)
	}
	if task.Description != "Build a REST auth API" || task.Context != "Go service, no frameworks" || len(task.Constraints) != 2 {
		t.Fatalf("get_task = %+v", task)
	}
	plan := map[string]any{"summary": "endpoints, then tests",
		"subtasks": []any{
			map[string]any{"id": "st_1", "description": "write the login endpoint", "estimated_complexity": "low"},
			map[string]any{"id": "st_2", "description": "write the tests", "dependencies": []string{"st_1"}},
		}}
	planner.call(mcpserver.ToolWritePlan, plan)

	// The reviewer sends it back with an issue.
	reviewer.state("plan v1 proposed", func(st workspace.State) bool { return st.PlanStatus == "proposed" && st.PlanVersion == 1 })
	if got := reviewer.call(mcpserver.ToolGetPlan, nil); !strings.Contains(got, "write the login endpoint") {
		t.Fatalf("get_plan: %s", got)
	}
	reviewer.call(mcpserver.ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "revision_needed",
		"issues": []any{map[string]any{"problem": "no checkpoint before the tests", "suggestion": "add one over st_2"}}})

	// The planner reads why and writes the next version.
	planner.state("plan v1 sent back", func(st workspace.State) bool { return st.PlanStatus == "revision_needed" })
	var lr struct {
		Reviews []workspace.Review `json:"reviews"`
	}
	if err := json.Unmarshal([]byte(planner.call(mcpserver.ToolListReviews, nil)), &lr); err != nil {
		t.Fatal(err)
	}
	if len(lr.Reviews) != 1 || lr.Reviews[0].Issues[0].Problem != "no checkpoint before the tests" || lr.Reviews[0].Reviewer != "reviewer" {
		t.Fatalf("list_reviews: %+v", lr)
	}
	plan["checkpoints"] = []any{map[string]any{"id": "cp_1", "subtasks": []string{"st_2"}}}
	if got := planner.call(mcpserver.ToolWritePlan, plan); !strings.Contains(got, "version 2") {
		t.Fatalf("second write_plan: %s", got)
	}

	// The reviewer approves it: the subtasks start.
	reviewer.state("plan v2 proposed", func(st workspace.State) bool { return st.PlanStatus == "proposed" && st.PlanVersion == 2 })
	reviewer.call(mcpserver.ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"})
	worker.state("executing", func(st workspace.State) bool { return st.Status == "executing" })

	// The worker takes both subtasks in turn.
	for _, id := range []string{"st_1", "st_2"} {
		worker.state(id+" pending", func(st workspace.State) bool { return st.Subtasks[id].Status == "pending" })
		worker.call(mcpserver.ToolClaimSubtask, map[string]any{"subtask_id": id})
		clitest.Eventually(t, id+" claimed", func() (bool, string) {
			text := worker.call(mcpserver.ToolGetSubtask, map[string]any{"subtask_id": id})
			return strings.Contains(text, `"status":"in_progress","worker":"worker"`), text
		})
		if id == "st_2" {
			if got := worker.call(mcpserver.ToolGetOutput, map[string]any{"subtask_id": "st_1"}); !strings.Contains(got, "POST /login") {
				t.Fatalf("get_output st_1: %s", got)
			}
		}
		worker.call(mcpserver.ToolSignalDone, map[string]any{"subtask_id": id, "output": map[string]any{"summary": id + " done: POST /login"}})
	}

	// The reviewer approves the checkpoint: the task completes.
	reviewer.state("cp_1 awaiting review", func(st workspace.State) bool { return st.Checkpoints["cp_1"].Status == "awaiting_review" })
	reviewer.call(mcpserver.ToolWriteReview, map[string]any{"type": "checkpoint_review", "verdict": "approved", "target": "cp_1"})
	st := planner.state("completed", func(st workspace.State) bool { return st.Status == "completed" })
	if st.RevisionCount != 1 || st.PlanVersion != 2 || len(st.Errors) != 0 {
		t.Fatalf("final state: %+v", st)
	}

	// The tree holds what the tools wrote, as any other reader sees it.
	for _, rel := range []string{"plans/plan_v1.json", "reviews/plan_v1.json", "reviews/plan_v2.json", "reviews/cp_1_review.json", "outputs/st_2.json"} {
		if _, err := os.Stat(filepath.Join(w.Root, "tasks", "t1", rel)); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
	events := w.Ok("events", "--task", "t1")
	for _, e := range []string{"plan_revision_needed", "plan_approved", "checkpoint_approved", "task_completed"} {
		if !strings.Contains(events, e) {
			t.Errorf("events lack %s:\n%s", e, events)
		}
	}
	w.Ok("validate")
}

// A process serving MCP raises its GC target and, with its store open,
// sets its soft memory limit (a small live heap: mcpMemLimit), unless
// GOGC and GOMEMLIMIT say how.
func TestTuneMCPGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	tuneGC(mcpGCPercent)
	fitMemoryLimit(mcpMemLimit)
	if got := debug.SetGCPercent(100); got != mcpGCPercent {
		t.Errorf("GC percent = %d, want %d", got, mcpGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != mcpMemLimit {
		t.Errorf("memory limit = %d, want %d", got, mcpMemLimit)
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(1 << 30)
	tuneGC(mcpGCPercent)
	fitMemoryLimit(mcpMemLimit)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GC percent = %d with GOGC=50 set, want it left alone", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit = %d with GOMEMLIMIT set, want it left alone", got)
	}
}
