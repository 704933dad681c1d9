package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// tsClientDir is the small npm package of the TypeScript SDK client
// (flow.mjs, with its package.json and package-lock.json). .ci/run
// installs its node_modules with npm ci; nothing is downloaded here.
const tsClientDir = "../../mcpserver/testdata/tsclient"

// tsNode is the node that runs the TypeScript SDK client; the test is
// skipped, saying why, without node or the SDK installed.
func tsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		optdep.Skip(t, "node", "node is not on PATH: the TypeScript SDK client cannot run (Debian: nodejs and npm; .ci/run installs them)")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		optdep.Skipf(t, "node", "the TypeScript MCP SDK is not installed in %s: run npm ci there (.ci/run does)", tsClientDir)
	}
	return node
}

// runTSClient runs flow.mjs in mode against task t1 of w and decodes what
// it printed into out.
func runTSClient(t *testing.T, node string, w *ws, mode string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "flow.mjs", mode, clitest.Bin(), w.Root, "t1")
	cmd.Dir, cmd.Env = tsClientDir, clitest.CleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node flow.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node flow.mjs %s printed %q: %v", mode, stdout.String(), err)
	}
}

// TestMCPTypeScriptClient drives `workspaced mcp` with the official
// TypeScript SDK client (@modelcontextprotocol/sdk, stdio transport): the
// tools as that client sees them, the errors a model meets first, then a
// planner, a reviewer and a worker taking a task from plan to completion
// through MCP tools alone, against a running daemon.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "Build a REST auth API", "--constraint", "tests first")

	// Before any daemon has seen the task.
	var before struct {
		Tools      []string `json:"tools"`
		ScopeEnum  []string `json:"scope_enum"`
		DetailEnum []string `json:"detail_enum"`
		StatusEnum []string `json:"status_enum"`
		Task       workspace.Task
		Errors     map[string]struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"errors"`
		StateResource struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		} `json:"state_resource"`
	}
	runTSClient(t, node, w, "before", &before)
	want := mcpserver.ToolNames()
	sort.Strings(want)
	sort.Strings(before.Tools)
	if !reflect.DeepEqual(before.Tools, want) {
		t.Errorf("tools = %v, want %v", before.Tools, want)
	}
	if !reflect.DeepEqual(before.ScopeEnum, []string{"agent", "session", "global"}) || !reflect.DeepEqual(before.DetailEnum, []string{"minimal", "standard", "verbose"}) ||
		!reflect.DeepEqual(before.StatusEnum, []string{"completed", "failed", "cancelled"}) {
		t.Errorf("enums: scope %v, detail %v, status %v", before.ScopeEnum, before.DetailEnum, before.StatusEnum)
	}
	if before.Task.ID != "t1" || before.Task.Description != "Build a REST auth API" || len(before.Task.Constraints) != 1 {
		t.Errorf("get_task = %+v", before.Task)
	}
	for name, wants := range map[string][]string{
		"state_before_daemon": {"task t1 has no state yet", "hint: call get_task_state again"},
		"memory_missing":      {"no such key", "hint: call list_memory with scope session"},
		"memory_bad_scope":    {`scope must be one of "agent", "session", "global", not "po"`},
		"plan_missing":        {"task t1 has no plan yet", "hint: a planner writes it with write_plan"},
		"review_no_plan":      {"no plan to review yet"},
		"unknown_argument":    {`unknown argument "tusk"`, "hint: get_task takes task, thread"},
		"other_task":          {"this session serves task t1, not other"},
	} {
		e, ok := before.Errors[name]
		if !ok || !e.IsError {
			t.Errorf("%s: %+v, want a tool error", name, e)
			continue
		}
		for _, s := range wants {
			if !strings.Contains(e.Text, s) {
				t.Errorf("%s: %q lacks %q", name, e.Text, s)
			}
		}
		if strings.Contains(e.Text, "--") || strings.Contains(e.Text, "workspaced ") {
			t.Errorf("%s names a command line: %q", name, e.Text)
		}
	}
	if r := before.StateResource; r.Code == nil || *r.Code != -32602 || !strings.Contains(r.Message, "task t1 has no state yet") {
		t.Errorf("reading the state resource before the daemon: %+v", r)
	}

	// With the daemon: the whole flow.
	w.serve()
	var flow struct {
		Steps      []string        `json:"steps"`
		PlanV1     string          `json:"plan_v1"`
		ReviewV1   string          `json:"review_v1"`
		IssueSeen  string          `json:"issue_seen"`
		PlanV2     string          `json:"plan_v2"`
		ST1Output  map[string]any  `json:"st_1_output"`
		FinalState workspace.State `json:"final_state"`
		Reviews    []string        `json:"reviews"`
	}
	runTSClient(t, node, w, "flow", &flow)
	if len(flow.Steps) == 0 || flow.Steps[len(flow.Steps)-1] != "task completed" {
		t.Errorf("steps = %v", flow.Steps)
	}
	if !strings.Contains(flow.PlanV1, "Wrote plan.json version 1") || !strings.Contains(flow.PlanV2, "version 2 (plan plan_t1: 2 subtasks, 1 checkpoint)") ||
		!strings.Contains(flow.ReviewV1, "Wrote reviews/plan_v1.json (plan_review of plan_t1_v1: revision_needed, 1 issue)") {
		t.Errorf("answers: %q / %q / %q", flow.PlanV1, flow.ReviewV1, flow.PlanV2)
	}
	if flow.IssueSeen != "no checkpoint before the tests" || flow.ST1Output["summary"] != "st_1 done: POST /login" || flow.ST1Output["worker_id"] != "worker" {
		t.Errorf("what the planner and the worker read: %q, %v", flow.IssueSeen, flow.ST1Output)
	}
	if st := flow.FinalState; st.Status != "completed" || st.RevisionCount != 1 || st.PlanVersion != 2 || len(st.Errors) != 0 ||
		st.Subtasks["st_2"].Worker != "worker" || st.Checkpoints["cp_1"].Review != "cp_1_review" {
		t.Errorf("final state: %+v", st)
	}
	if want := []string{"plan_v1:plan_review:revision_needed:reviewer", "plan_v2:plan_review:approved:reviewer", "cp_1_review:checkpoint_review:approved:reviewer"}; !reflect.DeepEqual(flow.Reviews, want) {
		t.Errorf("reviews = %v, want %v", flow.Reviews, want)
	}
	// The daemon's own record agrees with what the client saw.
	x := w.Open()
	st, err := x.ReadState(t.Context(), "t1")
	if err != nil || st.Status != "completed" || st.JournalSeq != flow.FinalState.JournalSeq {
		t.Errorf("state.json: %+v, %v", st, err)
	}
	events := w.Ok("events", "--task", "t1")
	for _, e := range []string{"plan_revision_needed", "plan_approved", "checkpoint_approved", "task_completed"} {
		if !strings.Contains(events, e) {
			t.Errorf("events lack %s", e)
		}
	}
	w.Ok("validate")
}

// TestMCPTypeScriptHTTPClient drives `workspaced mcp --http` with the
// official TypeScript SDK client over its Streamable HTTP transport, one
// bearer token per agent: the tools as listed, the refusals (no token, a
// token for another task, a right the token lacks, a call naming another
// agent), the planner, reviewer and worker flow to the completed task,
// and every tool called once.
func TestMCPTypeScriptHTTPClient(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "Build a REST auth API", "--constraint", "tests first")
	w.Task("t2")
	toks := map[string]string{
		"planner":  w.addToken("--agent", "planner", "--task", "t1", "--may", "plan"),
		"reviewer": w.addToken("--agent", "reviewer", "--task", "t1", "--may", "review"),
		"worker":   w.addToken("--agent", "worker", "--task", "t1", "--may", "claim,done"),
		"outsider": w.addToken("--agent", "outsider", "--task", "t2", "--may", "claim,done,plan,review"),
		"all":      w.addToken("--agent", "all", "--task", "t1", "--may", "claim,done,plan,review", "--global-memory", "write"),
	}
	srv := w.mcpHTTP()
	w.serve()
	tokJSON, err := json.Marshal(toks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "flow.mjs", "http", srv.url, "-", "t1")
	cmd.Dir, cmd.Env = tsClientDir, append(clitest.CleanEnv(), "MCP_TOKENS="+string(tokJSON))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node flow.mjs http: %v\nstdout:\n%s\nstderr:\n%s\nserver:\n%s", err, stdout.String(), stderr.String(), srv.Log)
	}
	type result struct {
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
	}
	var out struct {
		Tools    []string `json:"tools"`
		Refusals struct {
			NoToken          string `json:"no_token"`
			OtherTask        string `json:"other_task"`
			PlanWithoutRight result `json:"plan_without_right"`
			ForgedAgent      result `json:"forged_agent"`
			GlobalMemory     result `json:"global_memory"`
		} `json:"refusals"`
		Steps      []string          `json:"steps"`
		FinalState workspace.State   `json:"final_state"`
		Reviews    []string          `json:"reviews"`
		Every      map[string]result `json:"every"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node flow.mjs http printed %q: %v", stdout.String(), err)
	}
	// The worker's token (claim, done) is shown no tool it may not call.
	var want []string
	for _, n := range mcpserver.ToolNames() {
		if n != mcpserver.ToolWritePlan && n != mcpserver.ToolWriteReview && n != mcpserver.ToolAmendPlan {
			want = append(want, n)
		}
	}
	sort.Strings(want)
	sort.Strings(out.Tools)
	if !reflect.DeepEqual(out.Tools, want) {
		t.Errorf("tools = %v, want %v", out.Tools, want)
	}
	r := out.Refusals
	if !strings.Contains(r.NoToken, "no bearer token") {
		t.Errorf("no token: %q", r.NoToken)
	}
	if !strings.Contains(r.OtherTask, "agent outsider may not work on task t1: its token covers t2") {
		t.Errorf("a token for another task: %q", r.OtherTask)
	}
	for name, c := range map[string]struct {
		r    result
		want string
	}{
		"plan without the right": {r.PlanWithoutRight, "agent worker may not write plans"},
		"a forged agent":         {r.ForgedAgent, "you act as agent worker; a call may not name another agent (stored_by"},
		"global memory":          {r.GlobalMemory, "may not write the global memory"},
	} {
		if !c.r.IsError || !strings.Contains(c.r.Text, c.want) {
			t.Errorf("%s: %+v", name, c.r)
		}
	}
	if len(out.Steps) == 0 || out.Steps[len(out.Steps)-1] != "task completed" || out.FinalState.Status != "completed" || out.FinalState.Subtasks["st_2"].Worker != "worker" {
		t.Errorf("the flow: steps %v, state %+v", out.Steps, out.FinalState)
	}
	if want := []string{"plan_v1:plan_review:revision_needed:reviewer", "plan_v2:plan_review:approved:reviewer", "cp_1_review:checkpoint_review:approved:reviewer"}; !reflect.DeepEqual(out.Reviews, want) {
		t.Errorf("reviews = %v, want %v", out.Reviews, want)
	}
	for _, n := range mcpserver.ToolNames() {
		res, ok := out.Every[n]
		if !ok {
			t.Errorf("%s was not called", n)
			continue
		}
		// The task is completed by now: a plan, a review, a claim or a
		// done report is refused at once (the daemon takes nothing more
		// for a finished task); every other call succeeds.
		marker := n == mcpserver.ToolWritePlan || n == mcpserver.ToolWriteReview || n == mcpserver.ToolClaimSubtask || n == mcpserver.ToolSignalDone ||
			n == mcpserver.ToolAmendPlan
		// A token for one task may not create tasks.
		if res.IsError != (marker || n == mcpserver.ToolCreateTask) {
			t.Errorf("%s: %+v", n, res)
		}
	}
	if got := out.Every[mcpserver.ToolStoreEnvData].Text; got != "Stored 'ts_http' in environment data (version 1)." {
		t.Errorf("store_env_data: %q", got)
	}
	log := srv.Log.String()
	for _, s := range []string{`reason="no bearer token"`, "agent=outsider", "agent=worker"} {
		if !strings.Contains(log, s) {
			t.Errorf("the server's log lacks %q", s)
		}
	}
	events := w.Ok("events", "--task", "t1")
	for _, e := range []string{"plan_approved", "checkpoint_approved", "task_completed"} {
		if !strings.Contains(events, e) {
			t.Errorf("events lack %s", e)
		}
	}
}

// TestMCPTypeScriptWholeWorkspace drives `workspaced mcp` without a task,
// as an editor's config starts it, with the TypeScript SDK client: the
// tasks listed, one created, the task named per call, the budgeted
// context as a tool.
func TestMCPTypeScriptWholeWorkspace(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "Build a REST auth API")
	var out struct {
		Tools   []string `json:"tools"`
		TaskArg []string `json:"task_arg"`
		Before  []string `json:"before"`
		NoTask  struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"no_task"`
		Created string            `json:"created"`
		After   []string          `json:"after"`
		GetTask string            `json:"get_task"`
		Stored  string            `json:"stored"`
		Env     []workspace.Entry `json:"env"`
		Context struct {
			Task   string `json:"task"`
			Budget int    `json:"budget"`
			Text   string `json:"text"`
		} `json:"context"`
	}
	runTSClient(t, node, w, "workspace", &out)
	if len(out.Tools) != len(mcpserver.ToolNames()) || !slices.Contains(out.TaskArg, "task") || !slices.Contains(out.TaskArg, "thread") {
		t.Errorf("tools %v, get_task's arguments %v", out.Tools, out.TaskArg)
	}
	if !slices.Equal(out.Before, []string{"t1"}) || out.Created != "t_new" || !slices.Equal(out.After, []string{"t1", "t_new"}) || out.GetTask != "t1" {
		t.Errorf("tasks: before %v, created %q, after %v, get_task %q", out.Before, out.Created, out.After, out.GetTask)
	}
	if !out.NoTask.IsError || !strings.Contains(out.NoTask.Text, "hint: pass task (call list_tasks") {
		t.Errorf("get_task without a task: %+v", out.NoTask)
	}
	if out.Stored != "Stored 'k' in environment data (version 1)." || len(out.Env) != 1 || out.Env[0].Key != "k" {
		t.Errorf("env of t_new: %q %+v", out.Stored, out.Env)
	}
	if out.Context.Task != "t1" || out.Context.Budget != 1000 || !strings.Contains(out.Context.Text, "Build a REST auth API") {
		t.Errorf("get_context: %+v", out.Context)
	}
	// What the client made is in the workspace, for every other door.
	if got := w.Ok("task", "show", "t_new"); !strings.Contains(got, "Made from an editor") {
		t.Errorf("task show t_new: %s", got)
	}
}
