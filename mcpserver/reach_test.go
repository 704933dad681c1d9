package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/tokens"
)

// TestWholeWorkspace: a server given no task serves every task. An editor
// configured once lists the tasks, creates one and works in any of them,
// naming the task or the thread per call; the budgeted context is a tool.
func TestWholeWorkspace(t *testing.T) {
	w := fixture(t)
	cs := connect(t, w, Options{Agent: "observer"})
	if !strings.Contains(cs.InitializeResult().Instructions, "No task is fixed: list_tasks") {
		t.Errorf("instructions: %q", cs.InitializeResult().Instructions)
	}

	var tasks []taskLine
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListTasks, nil)), &tasks); err != nil || len(tasks) != 2 || tasks[0].ID != "t1" || tasks[1].ID != "t2" {
		t.Fatalf("list_tasks = %+v, %v", tasks, err)
	}
	text, isErr := call(t, cs, ToolGetTask, nil)
	if !isErr || !strings.Contains(text, "no task named: this session serves the whole workspace") || !strings.Contains(text, "hint: pass task (call list_tasks") {
		t.Errorf("get_task without a task: %v %q", isErr, text)
	}
	if got := mustCall(t, cs, ToolGetTask, map[string]any{"task": "t2"}); !strings.Contains(got, `"description":"another task"`) {
		t.Errorf("get_task t2: %s", got)
	}
	text, isErr = call(t, cs, ToolGetTask, map[string]any{"task": "t9"})
	if !isErr || !strings.Contains(text, "hint: call list_tasks") {
		t.Errorf("get_task t9: %v %q", isErr, text)
	}

	// Env data per task; session memory per thread; agent memory needs
	// neither.
	mustCall(t, cs, ToolStoreEnvData, map[string]any{"task": "t2", "key": "k", "short_description": "d", "value": 2})
	mustCall(t, cs, ToolStoreEnvData, map[string]any{"thread": "th_observer", "key": "k", "short_description": "d", "value": 1})
	if got := mustCall(t, cs, ToolGetEnvData, map[string]any{"task": "t1", "key": "k"}); got != "1" {
		t.Errorf("env k of t1 = %s", got)
	}
	if got := mustCall(t, cs, ToolGetEnvData, map[string]any{"task": "t2", "key": "k"}); got != "2" {
		t.Errorf("env k of t2 = %s", got)
	}
	mustCall(t, cs, ToolStoreMemory, map[string]any{"key": "m", "value": "mine"})
	text, isErr = call(t, cs, ToolStoreMemory, map[string]any{"key": "m", "value": "x", "scope": "session"})
	if !isErr || !strings.Contains(text, "hint: pass thread") {
		t.Errorf("session memory without a thread: %v %q", isErr, text)
	}
	if got := mustCall(t, cs, ToolStoreMemory, map[string]any{"key": "m", "value": "x", "scope": "session", "thread": "th_observer"}); !strings.Contains(got, "session memory of thread th_observer") {
		t.Errorf("session memory: %s", got)
	}

	// A new task, then its work.
	created := mustCall(t, cs, ToolCreateTask, map[string]any{"id": "t3", "description": "Index the corpus"})
	if !strings.Contains(created, `"submitted_by":"observer"`) {
		t.Errorf("create_task: %s", created)
	}
	if text, isErr := call(t, cs, ToolCreateTask, map[string]any{"id": "t3", "description": "again"}); !isErr || !strings.Contains(text, "hint: choose another id") {
		t.Errorf("create_task twice: %v %q", isErr, text)
	}
	if got := mustCall(t, cs, ToolGetTask, map[string]any{"task": "t3"}); !strings.Contains(got, "Index the corpus") {
		t.Errorf("get_task t3: %s", got)
	}

	// The budgeted context of a thread: its text, and the bundle.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolGetContext, Arguments: map[string]any{"thread": "th_observer", "budget": 2000}})
	if err != nil || res.IsError {
		t.Fatalf("get_context: %v %+v", err, res)
	}
	bundle, _ := json.Marshal(res.StructuredContent)
	var b struct {
		Thread, Task string
		Budget       int
	}
	if err := json.Unmarshal(bundle, &b); err != nil || b.Thread != "th_observer" || b.Task != "t1" || b.Budget != 2000 {
		t.Errorf("get_context bundle: %s", bundle)
	}
	if tc := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(tc, "What patterns do you notice?") {
		t.Errorf("get_context text lacks the thread's message: %q", tc)
	}
}

// TestBoundSessionTakesItsTask: a session bound to a task takes the task
// argument naming it, and refuses another; a thread of its task is
// taken too.
func TestBoundSessionTakesItsTask(t *testing.T) {
	_, cs := observer(t)
	if got := mustCall(t, cs, ToolGetTask, map[string]any{"task": "t1"}); !strings.Contains(got, `"id":"t1"`) {
		t.Errorf("get_task t1: %s", got)
	}
	text, isErr := call(t, cs, ToolGetTask, map[string]any{"task": "t2"})
	if !isErr || !strings.Contains(text, "this session serves task t1, not t2") {
		t.Errorf("get_task t2: %v %q", isErr, text)
	}
	if got := mustCall(t, cs, ToolGetContext, map[string]any{"thread": "th_solver", "budget": 500}); !strings.Contains(got, "Solve ARC task training-001") {
		t.Errorf("get_context th_solver: %q", got)
	}
	text, isErr = call(t, cs, ToolGetContext, map[string]any{"thread": "th_other"})
	if !isErr || !strings.Contains(text, "th_other") {
		t.Errorf("a thread of another task: %v %q", isErr, text)
	}
}

// TestWholeWorkspaceGrants: a session without a task serves what its
// token covers: a token for one task needs no task argument and sees only
// it; a token for some tasks may not create one.
func TestWholeWorkspaceGrants(t *testing.T) {
	w := fixture(t)
	one := tokens.Grant{Agent: "observer", Tasks: []string{"t1"}}
	cs := connect(t, w, Options{Agent: "observer", Grants: func(*mcp.RequestExtra) (tokens.Grant, error) { return one, nil }})
	if got := mustCall(t, cs, ToolGetTask, nil); !strings.Contains(got, `"id":"t1"`) {
		t.Errorf("get_task with a token for t1: %s", got)
	}
	var tasks []taskLine
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListTasks, nil)), &tasks); err != nil || len(tasks) != 1 || tasks[0].ID != "t1" {
		t.Errorf("list_tasks = %+v, %v", tasks, err)
	}
	text, isErr := call(t, cs, ToolGetTask, map[string]any{"task": "t2"})
	if !isErr || !strings.Contains(text, "may not work on task t2: its token covers t1") {
		t.Errorf("get_task t2: %v %q", isErr, text)
	}
	text, isErr = call(t, cs, ToolCreateTask, map[string]any{"description": "x"})
	if !isErr || !strings.Contains(text, "agent observer may not create tasks") {
		t.Errorf("create_task: %v %q", isErr, text)
	}

	all := tokens.Grant{Agent: "observer", Tasks: []string{tokens.AllTasks}}
	cs = connect(t, w, Options{Agent: "observer", Grants: func(*mcp.RequestExtra) (tokens.Grant, error) { return all, nil }})
	if text, isErr := call(t, cs, ToolGetTask, nil); !isErr || !strings.Contains(text, "no task named") {
		t.Errorf("get_task with a token for every task: %v %q", isErr, text)
	}
	if got := mustCall(t, cs, ToolCreateTask, map[string]any{"description": "fresh"}); !strings.Contains(got, `"id":"task_`) {
		t.Errorf("create_task: %s", got)
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		props, _ := tl.InputSchema.(map[string]any)["properties"].(map[string]any)
		_, hasTask := props["task"]
		if hasTask != takesTask(tl.Name) {
			t.Errorf("%s: task argument %v", tl.Name, hasTask)
		}
	}
}
