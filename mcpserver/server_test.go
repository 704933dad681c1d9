package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/ops"
)

var t0 = time.Date(2024, 1, 15, 10, 0, 0, 123_000_000, time.UTC)

// fixture is a workspace with task t1, the delegation chain
// human → coordinator → solver → observer, and cards for solver and
// observer.
func fixture(t testing.TB) *files.Store {
	t.Helper()
	ctx := context.Background()
	w, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "Solve ARC task training-001"}); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t2", Description: "another task"}); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	for _, th := range []workspace.NewThreadRequest{
		{TaskID: "t1", ID: "th_solver", From: "coordinator", To: "solver", Message: "Solve ARC task training-001"},
		{TaskID: "t1", ID: "th_observer", ParentID: "th_solver", From: "solver", To: "observer", Message: "What patterns do you notice?"},
		{TaskID: "t2", ID: "th_other", From: "coordinator", To: "solver", Message: "other"},
	} {
		if _, err := w.NewThread(ctx, th); err != nil {
			t.Fatalf("NewThread %s: %v", th.ID, err)
		}
	}
	cards := workspace.AgentCards{Agents: []workspace.AgentCard{
		{Name: "solver", Description: "Solves ARC-AGI puzzles by finding the transformation.", Role: "worker"},
		{Name: "observer", Description: "Notices patterns in grids.", Role: "worker", Capabilities: []string{"read_file"}},
	}}
	if err := w.WriteJSON("config/agents.json", cards); err != nil {
		t.Fatalf("write cards: %v", err)
	}
	return w
}

// connect serves w with opt over an in-memory transport and returns the
// client's session.
func connect(t *testing.T, w *files.Store, opt Options) *mcp.ClientSession {
	t.Helper()
	s, err := New(w, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func observer(t *testing.T) (*files.Store, *mcp.ClientSession) {
	w := fixture(t)
	return w, connect(t, w, Options{TaskID: "t1", ThreadID: "th_observer", Agent: "observer"})
}

// call calls a tool; a protocol error fails the test, a tool error is
// returned as isError.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (text string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("%s: content %T, want text", name, c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "\n"), res.IsError
}

// mustCall calls a tool that must succeed.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	text, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}

// readEntry reads an entry file of the tree.
func readEntry(t *testing.T, w *files.Store, rel string) workspace.Entry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	var e workspace.Entry
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	return e
}

func exists(w *files.Store, rel string) bool {
	_, err := os.Lstat(filepath.Join(w.Dir(), filepath.FromSlash(rel)))
	return err == nil
}

// jsonEqual compares two JSON texts structurally.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, wv any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &wv); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, wv) {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
}

// inputSchemaOf is the part of a tool's input schema the tests read.
type propSchema struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Enum                 []string               `json:"enum"`
	Minimum              *int                   `json:"minimum"`
	Items                *propSchema            `json:"items"`
	Properties           map[string]*propSchema `json:"properties"`
	Required             []string               `json:"required"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
}

func TestListTools(t *testing.T) {
	t.Parallel()
	_, cs := observer(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		tools[tl.Name] = tl
	}
	want := ToolNames()
	sort.Strings(names)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	var universal []string
	for _, c := range ops.UniversalCapabilities {
		universal = append(universal, c.Name)
	}
	sort.Strings(universal)
	if !reflect.DeepEqual(want, universal) {
		t.Fatalf("ToolNames %v differ from ops.UniversalCapabilities %v", want, universal)
	}
	// Memory is called memory: no tool, and no description, names a
	// memory operation "state".
	for _, old := range []string{"store_state", "get_state", "list_state", "delete_state"} {
		for _, tl := range res.Tools {
			if tl.Name == old || strings.Contains(tl.Description, old) {
				t.Errorf("tool %s names %s", tl.Name, old)
			}
		}
	}

	// The required arguments, the properties and the enums, from the
	// input schemas.
	scopes := []string{"agent", "session", "global"}
	cases := []struct {
		tool     string
		required []string
		props    []string
		enums    map[string][]string
	}{
		{ToolStoreEnvData, []string{"key", "value"}, []string{"key", "short_description", "value"}, nil},
		{ToolGetEnvData, []string{"key"}, []string{"key"}, nil},
		{ToolListEnvData, nil, nil, nil},
		{ToolUpdateEnvData, []string{"key"}, []string{"if_version", "key", "short_description", "value"}, nil},
		{ToolDeleteEnvData, []string{"key"}, []string{"key"}, nil},
		{ToolStoreMemory, []string{"key", "value"}, []string{"key", "scope", "short_description", "value"}, map[string][]string{"scope": scopes}},
		{ToolGetMemory, []string{"key"}, []string{"key", "scope"}, map[string][]string{"scope": scopes}},
		{ToolListMemory, nil, []string{"scope"}, map[string][]string{"scope": scopes}},
		{ToolDeleteMemory, []string{"key"}, []string{"key", "scope"}, map[string][]string{"scope": scopes}},
		{ToolGetMemoryHistory, []string{"key"}, []string{"key", "scope"}, map[string][]string{"scope": {"agent", "global"}}},
		{ToolPutMemoryItem, []string{"key", "namespace", "value"}, []string{"if_absent", "if_version", "key", "namespace", "ttl_seconds", "value"}, nil},
		{ToolGetMemoryItem, []string{"key", "namespace"}, []string{"key", "namespace"}, nil},
		{ToolDeleteMemoryItem, []string{"key", "namespace"}, []string{"if_version", "key", "namespace"}, nil},
		{ToolSearchMemory, nil, []string{"filter", "limit", "namespace_prefix", "offset"}, nil},
		{ToolMemoryNamespaces, nil, []string{"limit", "max_depth", "offset", "prefix", "suffix"}, nil},
		{ToolGetTask, nil, nil, nil},
		{ToolGetTaskState, nil, nil, nil},
		{ToolGetPlan, nil, []string{"version"}, nil},
		{ToolGetSubtask, []string{"subtask_id"}, []string{"subtask_id"}, nil},
		{ToolGetOutput, []string{"subtask_id"}, []string{"subtask_id"}, nil},
		{ToolListReviews, nil, nil, nil},
		{ToolGetReview, []string{"review_id"}, []string{"review_id"}, nil},
		{ToolWritePlan, []string{"subtasks"}, []string{"assumptions", "checkpoints", "risks", "subtasks", "summary", "worker_count"}, nil},
		{ToolAmendPlan, nil, []string{"add", "change", "withdraw"}, nil},
		{ToolWriteReview, []string{"type", "verdict"}, []string{"escalate", "issues", "notes", "review_id", "target", "type", "verdict"},
			map[string][]string{"type": {"plan_review", "checkpoint_review", "output_review"}, "verdict": {"approved", "revision_needed", "rejected"}}},
		{ToolClaimSubtask, []string{"subtask_id"}, []string{"subtask_id"}, nil},
		{ToolSignalDone, nil, []string{"error", "escalate", "output", "output_file", "status", "subtask_id"}, map[string][]string{"status": {"completed", "failed", "cancelled"}}},
		{ToolGetDelegationContext, nil, []string{"detail"}, map[string][]string{"detail": {"minimal", "standard", "verbose"}}},
		{ToolListCapabilities, nil, nil, nil},
		{ToolSkills, nil, []string{"name"}, nil},
		{ToolListTasks, nil, nil, nil},
		{ToolCreateTask, []string{"description"}, []string{"constraints", "context", "description", "id", "priority", "to"}, nil},
		{ToolGetContext, nil, []string{"budget", "unlimited"}, nil},
	}
	if len(cases) != len(ToolNames()) {
		t.Fatalf("%d cases for %d tools", len(cases), len(ToolNames()))
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			tl := tools[c.tool]
			if len(tl.Description) < 16 || !strings.HasSuffix(tl.Description, ".") {
				t.Errorf("description is not a sentence a model can act on: %q", tl.Description)
			}
			// A JSON answer has an output schema: an object.
			if hasOut := tl.OutputSchema != nil; hasOut != jsonAnswer[c.tool] {
				t.Errorf("output schema %v, want one: %v", tl.OutputSchema, jsonAnswer[c.tool])
			} else if hasOut {
				var out propSchema
				data, _ := json.Marshal(tl.OutputSchema)
				if err := json.Unmarshal(data, &out); err != nil || out.Type != "object" {
					t.Errorf("output schema %s: %v", data, err)
				}
			}
			data, err := json.Marshal(tl.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var sch propSchema
			if err := json.Unmarshal(data, &sch); err != nil {
				t.Fatal(err)
			}
			if sch.Type != "object" {
				t.Errorf("schema type %v, want object", sch.Type)
			}
			req := append([]string{}, sch.Required...)
			sort.Strings(req)
			if !reflect.DeepEqual(req, c.required) && !(len(req) == 0 && len(c.required) == 0) {
				t.Errorf("required = %v, want %v", req, c.required)
			}
			var props []string
			for p := range sch.Properties {
				props = append(props, p)
			}
			sort.Strings(props)
			if !reflect.DeepEqual(props, c.props) && !(len(props) == 0 && len(c.props) == 0) {
				t.Errorf("properties = %v, want %v", props, c.props)
			}
			for p, want := range c.enums {
				if got := sch.Properties[p].Enum; !reflect.DeepEqual(got, want) {
					t.Errorf("%s enum = %v, want %v", p, got, want)
				}
			}
			checkShapes(t, c.tool, &sch)
		})
	}
}

// jsonAnswer is the tools whose answer is JSON, and so structured.
var jsonAnswer = map[string]bool{
	ToolGetEnvData: true, ToolListEnvData: true, ToolGetMemory: true, ToolListMemory: true, ToolGetMemoryHistory: true,
	ToolGetTask: true, ToolGetTaskState: true, ToolGetPlan: true, ToolGetSubtask: true, ToolGetOutput: true,
	ToolListReviews: true, ToolGetReview: true, ToolSkills: true,
	ToolGetMemoryItem: true, ToolSearchMemory: true, ToolMemoryNamespaces: true,
	ToolWritePlan: true, ToolAmendPlan: true, ToolWriteReview: true, ToolClaimSubtask: true, ToolSignalDone: true,
	ToolListTasks: true, ToolCreateTask: true, ToolGetContext: true,
}

// checkShapes checks that every argument, nested ones too, is shaped
// alike: one JSON type, never null (value and output excepted: any JSON,
// and any object); a description, where there is one, that does not say
// "Optional" (the schema's required list says that).
func checkShapes(t *testing.T, where string, sch *propSchema) {
	t.Helper()
	for name, p := range sch.Properties {
		at := where + "." + name
		typ, _ := p.Type.(string)
		switch {
		case name == "value":
			if p.Type != nil {
				t.Errorf("%s: type %v, want any JSON", at, p.Type)
			}
		case typ == "" || typ == "null":
			t.Errorf("%s: type %v, want one JSON type", at, p.Type)
		}
		if strings.HasPrefix(p.Description, "Optional") {
			t.Errorf("%s: description %q", at, p.Description)
		}
		if p.Items != nil && p.Items.Properties != nil {
			checkShapes(t, at+"[]", p.Items)
		}
	}
}

// maxToolsListBytes bounds what the tools cost every agent in every
// session: the JSON of the whole tools/list answer. The five tools of
// namespaced memory took it from under 9 KiB to 10.8 KiB; list_tasks,
// create_task and get_context to 11.8 KiB; amend_plan to 12.6 KiB;
// get_memory_history to 12.99 KiB. (A
// session of the whole workspace is shown the task and thread arguments
// too: 1.3 KiB more.)
const maxToolsListBytes = 13 << 10

// TestToolsListBytes: the tools' names, descriptions, input and output
// schemas, as a client of a session bound to a task receives them, fit in
// 12 KiB.
func TestToolsListBytes(t *testing.T) {
	t.Parallel()
	_, cs := observer(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(ToolNames()) {
		t.Fatalf("%d tools listed, want all %d", len(res.Tools), len(ToolNames()))
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list: %d bytes for %d tools", len(data), len(res.Tools))
	if len(data) > maxToolsListBytes {
		t.Fatalf("tools/list is %d bytes, more than %d", len(data), maxToolsListBytes)
	}
}

func TestEnvData(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	// A number beyond float64's exact range must come back digit for digit.
	args := json.RawMessage(`{"key":"arc_task","short_description":"The current ARC puzzle.","value":{"task_id":"training-001","grid":[[0,1],[2,3]],"seed":12345678901234567890}}`)
	if got := mustCall(t, cs, ToolStoreEnvData, args); got != "Stored 'arc_task' in environment data (version 1)." {
		t.Fatalf("store = %q", got)
	}
	e := readEntry(t, w, "tasks/t1/env/arc_task.json")
	if e.StoredBy != "observer" || e.Version != 1 || e.ShortDescription != "The current ARC puzzle." {
		t.Fatalf("entry = %+v", e)
	}
	if !strings.Contains(string(e.Value), "12345678901234567890") {
		t.Fatalf("value lost digits: %s", e.Value)
	}

	got := mustCall(t, cs, ToolGetEnvData, map[string]any{"key": "arc_task"})
	jsonEqual(t, got, `{"task_id":"training-001","grid":[[0,1],[2,3]],"seed":12345678901234567890}`)
	if !strings.Contains(got, "12345678901234567890") {
		t.Fatalf("get lost digits: %s", got)
	}

	mustCall(t, cs, ToolStoreEnvData, map[string]any{"key": "notes", "short_description": "text", "value": "a <b> & c"})
	var items []workspace.ManifestItem
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListEnvData, map[string]any{})), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Key != "arc_task" || items[1].Key != "notes" {
		t.Fatalf("list = %+v", items)
	}
	for _, it := range items {
		if it.StoredBy != "observer" || it.Version != 1 || it.Size == 0 || !it.UpdatedAt.Equal(t0) {
			t.Errorf("manifest item %+v", it)
		}
	}
	if got := mustCall(t, cs, ToolGetEnvData, map[string]any{"key": "notes"}); got != `"a <b> & c"` {
		t.Errorf("get notes = %s", got)
	}

	// Update the description only: the value is kept.
	if got := mustCall(t, cs, ToolUpdateEnvData, map[string]any{"key": "arc_task", "short_description": "Solved."}); got != "Updated 'arc_task' (version 2)." {
		t.Fatalf("update = %q", got)
	}
	e = readEntry(t, w, "tasks/t1/env/arc_task.json")
	if e.ShortDescription != "Solved." || e.Version != 2 || !strings.Contains(string(e.Value), "training-001") {
		t.Fatalf("after update: %+v", e)
	}
	// Update the value with a matching if_version.
	mustCall(t, cs, ToolUpdateEnvData, map[string]any{"key": "arc_task", "value": []int{1, 2}, "if_version": 2})
	if got := mustCall(t, cs, ToolGetEnvData, map[string]any{"key": "arc_task"}); got != "[1,2]" {
		t.Fatalf("get after update = %s", got)
	}
	// Update to null is a value, not an omission.
	mustCall(t, cs, ToolUpdateEnvData, map[string]any{"key": "notes", "value": nil})
	if got := mustCall(t, cs, ToolGetEnvData, map[string]any{"key": "notes"}); got != "null" {
		t.Fatalf("get null = %s", got)
	}

	if got := mustCall(t, cs, ToolDeleteEnvData, map[string]any{"key": "notes"}); got != "Deleted 'notes' from environment data." {
		t.Fatalf("delete = %q", got)
	}
	if exists(w, "tasks/t1/env/notes.json") {
		t.Fatal("notes.json still there after delete")
	}

	events, err := os.ReadFile(filepath.Join(w.Dir(), "tasks", "t1", "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"env_stored t1 agent=observer key=arc_task", "env_updated t1 agent=observer key=arc_task", "env_deleted t1 agent=observer key=notes"} {
		if !strings.Contains(string(events), want) {
			t.Errorf("events.log lacks %q:\n%s", want, events)
		}
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	cases := []struct {
		scope string // as passed; "-" leaves it out
		file  string
		where string
	}{
		{"-", "memory/agents/observer/style.json", "your agent memory"},
		{"agent", "memory/agents/observer/style.json", "your agent memory"},
		{"session", "tasks/t1/sessions/th_observer/style.json", "the session memory of thread th_observer"},
		{"global", "memory/global/style.json", "the global memory shared by every agent"},
	}
	for _, c := range cases {
		t.Run(c.scope, func(t *testing.T) {
			args := map[string]any{"key": "style", "value": map[string]any{"brief": true}}
			keyArgs := map[string]any{"key": "style"}
			scopeArgs := map[string]any{}
			if c.scope != "-" {
				args["scope"], keyArgs["scope"], scopeArgs["scope"] = c.scope, c.scope, c.scope
			}
			got := mustCall(t, cs, ToolStoreMemory, args)
			if want := "Stored 'style' in " + c.where + " (version 1)."; got != want {
				t.Fatalf("store = %q, want %q", got, want)
			}
			e := readEntry(t, w, c.file)
			if e.StoredBy != "observer" || e.ShortDescription != "" {
				t.Fatalf("entry %+v", e)
			}
			if got := mustCall(t, cs, ToolGetMemory, keyArgs); got != `{"brief":true}` {
				t.Fatalf("get = %s", got)
			}
			var items []workspace.ManifestItem
			if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListMemory, scopeArgs)), &items); err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 || items[0].Key != "style" || items[0].StoredBy != "observer" {
				t.Fatalf("list = %+v", items)
			}
			if got := mustCall(t, cs, ToolDeleteMemory, keyArgs); got != "Deleted 'style' from "+c.where+"." {
				t.Fatalf("delete = %q", got)
			}
			if exists(w, c.file) {
				t.Fatalf("%s still there", c.file)
			}
			// A missing key names the listing tool with the same scope.
			text, isErr := call(t, cs, ToolGetMemory, keyArgs)
			scope := c.scope
			if scope == "-" {
				scope = "agent"
			}
			if !isErr || !strings.Contains(text, "no such key\nhint: call list_memory with scope "+scope+" to see which keys exist") {
				t.Fatalf("get of a deleted key: %q (error %v)", text, isErr)
			}
		})
	}
	mustCall(t, cs, ToolStoreMemory, map[string]any{"key": "k", "value": 1, "short_description": "a number"})
	if e := readEntry(t, w, "memory/agents/observer/k.json"); e.ShortDescription != "a number" {
		t.Fatalf("description %q", e.ShortDescription)
	}
}

// writeState writes a minimal valid state.json for t1 with subtask st_1
// pending, as the daemon would.
func writeState(t *testing.T, w *files.Store) {
	t.Helper()
	st := workspace.State{TaskID: "t1", Status: "executing", Phase: "execution", LastUpdated: t0,
		Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "pending"}},
		Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{},
		Errors: []workspace.StateError{}}
	if err := w.WriteJSON("tasks/t1/state.json", st); err != nil {
		t.Fatal(err)
	}
}

// markers returns the markers with the prefix in t1, parsed.
func markers(t *testing.T, w *files.Store, prefix string) []workspace.Marker {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(w.Dir(), "tasks", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	var out []workspace.Marker
	for _, de := range ents {
		if !strings.HasPrefix(de.Name(), prefix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(w.Dir(), "tasks", "t1", de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var m workspace.Marker
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestClaimAndDone(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	writeState(t, w)
	got := mustCall(t, cs, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"})
	// No daemon serves the fixture: the claim is queued, which is no error.
	for _, want := range []string{"tasks/t1/.claim.observer.", "No workspace daemon serves this workspace", `get_subtask with subtask_id "st_1"`, `status "in_progress" and worker "observer"`, "Do not start the work", "showed subtask 'st_1' as pending"} {
		if !strings.Contains(got, want) {
			t.Errorf("claim text lacks %q:\n%s", want, got)
		}
	}
	claims := markers(t, w, ".claim.observer.")
	if len(claims) != 1 || claims[0].AgentID != "observer" || claims[0].SubtaskID != "st_1" || claims[0].ClaimedAt == nil {
		t.Fatalf("claims = %+v", claims)
	}
	got = mustCall(t, cs, ToolClaimSubtask, map[string]any{"subtask_id": "st_9"})
	if !strings.Contains(got, "lists no subtask 'st_9'") {
		t.Errorf("claim of an unknown subtask does not warn:\n%s", got)
	}

	args := json.RawMessage(`{"subtask_id":"st_1","output":{"summary":"rotation found","decisions":["rotate 90"],"big":12345678901234567890}}`)
	got = mustCall(t, cs, ToolSignalDone, args)
	for _, want := range []string{"Wrote outputs/st_1.json.", "tasks/t1/.done.observer.", "subtask 'st_1' completed", "product outputs/st_1.json", "get_subtask shows the subtask's new status"} {
		if !strings.Contains(got, want) {
			t.Errorf("done text lacks %q:\n%s", want, got)
		}
	}
	data, err := os.ReadFile(filepath.Join(w.Dir(), "tasks", "t1", "outputs", "st_1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out["subtask_id"] != "st_1" || out["worker_id"] != "observer" || out["summary"] != "rotation found" || out["status"] != nil {
		t.Fatalf("output = %s", data)
	}
	if !strings.Contains(string(data), "12345678901234567890") {
		t.Fatalf("output lost digits: %s", data)
	}
	dones := markers(t, w, ".done.observer.")
	if len(dones) != 1 || dones[0].OutputFile != "outputs/st_1.json" || dones[0].SubtaskID != "st_1" || dones[0].Status != "completed" || dones[0].AgentID != "observer" {
		t.Fatalf("done markers = %+v", dones)
	}

	// A failure with its output: status and error land in the output too.
	mustCall(t, cs, ToolSignalDone, map[string]any{"subtask_id": "st_2", "status": "failed", "error": "no pattern", "output": map[string]any{"summary": "gave up"}})
	data, err = os.ReadFile(filepath.Join(w.Dir(), "tasks", "t1", "outputs", "st_2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out["status"] != "failed" || out["error"] != "no pattern" {
		t.Fatalf("failed output = %s", data)
	}
	// output_file defaults to outputs/<subtask_id>.json when it exists.
	mustCall(t, cs, ToolSignalDone, map[string]any{"subtask_id": "st_1"})
	if n := len(markers(t, w, ".done.observer.")); n != 3 {
		t.Fatalf("%d done markers, want 3", n)
	}
}

func TestDelegationContext(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	cs := connect(t, w, Options{ThreadID: "th_observer", Agent: "observer"})
	got := mustCall(t, cs, ToolGetDelegationContext, map[string]any{})
	p, err := ops.Over(w).Preamble(t.Context(), "th_observer", ops.PreambleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != p.Text || !strings.Contains(got, "Called by: solver") {
		t.Fatalf("context = %q, want the preamble %q", got, p.Text)
	}
	if got := mustCall(t, cs, ToolGetDelegationContext, map[string]any{"detail": "minimal"}); strings.Contains(got, "Task context") || !strings.Contains(got, "Delegation chain:") {
		t.Fatalf("minimal context = %q", got)
	}

	root := connect(t, w, Options{TaskID: "t1", Agent: "coordinator"})
	got = mustCall(t, root, ToolGetDelegationContext, map[string]any{})
	if !strings.HasPrefix(got, "There is no delegation context for thread t1: ") || !strings.Contains(got, "root thread") {
		t.Fatalf("root context = %q", got)
	}
}

func TestListCapabilities(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	got := mustCall(t, cs, ToolListCapabilities, map[string]any{})
	want, err := ops.Over(w).Capabilities(t.Context(), "observer", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("capabilities = %q, want the system context %q", got, want)
	}
	for _, n := range ToolNames() {
		if !strings.Contains(got, "  - "+n+": ") {
			t.Errorf("capabilities do not list %s", n)
		}
	}
	// The tool describes the tools; it does not send the model to itself.
	if strings.Count(got, ToolListCapabilities) != 1 {
		t.Errorf("the answer names list_capabilities beyond its own entry:\n%s", got)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	mustCall(t, cs, ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": 1})
	mustCall(t, cs, ToolUpdateEnvData, map[string]any{"key": "k", "value": 2})
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	big := `"` + strings.Repeat("x", 1100*1024) + `"`
	cases := []struct {
		name string
		tool string
		args any
		want []string // substrings of the error text
	}{
		{"missing key", ToolStoreEnvData, map[string]any{"short_description": "d", "value": 1}, []string{"key"}},
		{"missing value", ToolStoreEnvData, map[string]any{"key": "a", "short_description": "d"}, []string{"value"}},
		{"key not a string", ToolGetEnvData, map[string]any{"key": 5}, []string{"key"}},
		{"unknown argument", ToolGetEnvData, map[string]any{"key": "k", "scope": "po"}, []string{"scope"}},
		{"empty key", ToolStoreEnvData, map[string]any{"key": "", "short_description": "d", "value": 1}, []string{"key"}},
		{"value too deep", ToolStoreEnvData, json.RawMessage(`{"key":"a","short_description":"d","value":` + deep + `}`), []string{"deep"}},
		{"value too large", ToolStoreEnvData, json.RawMessage(`{"key":"a","short_description":"d","value":` + big + `}`), []string{"limit", "hint: "}},
		{"unknown key", ToolGetEnvData, map[string]any{"key": "nope"}, []string{`"nope"`, "no such key", "hint: call list_env_data to see which keys exist"}},
		{"update unknown key", ToolUpdateEnvData, map[string]any{"key": "nope", "value": 1}, []string{"no such key", "hint: call store_env_data to create it"}},
		{"update nothing", ToolUpdateEnvData, map[string]any{"key": "k"}, []string{"nothing to update", "hint: "}},
		{"if_version conflict", ToolUpdateEnvData, map[string]any{"key": "k", "value": 3, "if_version": 1}, []string{"version is 2, not 1", "hint: another agent changed it since you read it: call get_env_data"}},
		{"negative if_version", ToolUpdateEnvData, map[string]any{"key": "k", "value": 3, "if_version": -1}, []string{"if_version must be at least 1, not -1"}},
		{"delete unknown key", ToolDeleteEnvData, map[string]any{"key": "nope"}, []string{"no such key"}},
		{"bad scope", ToolStoreMemory, map[string]any{"key": "a", "value": 1, "scope": "planet"}, []string{`scope must be one of "agent", "session", "global", not "planet"`}},
		{"old scope name", ToolGetMemory, map[string]any{"key": "a", "scope": "po"}, []string{`not "po"`}},
		{"thread scope for memory", ToolGetMemory, map[string]any{"key": "a", "scope": "thread"}, []string{`not "thread"`}},
		{"unknown memory key", ToolGetMemory, map[string]any{"key": "nope", "scope": "session"}, []string{"no such key"}},
		{"bad subtask id", ToolClaimSubtask, map[string]any{"subtask_id": "../x"}, []string{`subtask_id must be an id, not "../x": ids are 1–128 characters`}},
		{"done without output", ToolSignalDone, map[string]any{}, []string{"nothing to report", "hint: pass subtask_id and your result as output"}},
		{"failed without error or output", ToolSignalDone, map[string]any{"output_file": "plan.json", "status": "failed"}, []string{"needs an error", "hint: say why the work failed (argument error)"}},
		{"done product missing", ToolSignalDone, map[string]any{"subtask_id": "st_7"}, []string{"outputs/st_7.json does not exist", "hint: pass your result as output"}},
		{"failed without error", ToolSignalDone, map[string]any{"subtask_id": "st_1", "status": "failed", "output": map[string]any{}}, []string{"needs an error"}},
		{"bad status with output", ToolSignalDone, map[string]any{"subtask_id": "st_1", "status": "great", "output": map[string]any{}}, []string{`status must be one of "completed", "failed", "cancelled", not "great"`}},
		{"bad status", ToolSignalDone, map[string]any{"output_file": "plan.json", "status": "great"}, []string{`status must be one of "completed", "failed", "cancelled", not "great"`}},
		{"output without subtask", ToolSignalDone, map[string]any{"output": map[string]any{"summary": "x"}}, []string{"subtask_id"}},
		{"output not an object", ToolSignalDone, json.RawMessage(`{"subtask_id":"st_1","output":[1]}`), []string{"output"}},
		{"output_file outside the task", ToolSignalDone, map[string]any{"output_file": "../t2/plan.json"}, []string{"output_file"}},
		{"bad detail", ToolGetDelegationContext, map[string]any{"detail": "huge"}, []string{`detail must be one of "minimal", "standard", "verbose", not "huge"`}},
		{"arguments not an object", ToolGetEnvData, json.RawMessage(`["key"]`), []string{"not a JSON object"}},
		{"another task than the session's", ToolGetTask, map[string]any{"task": "t2"}, []string{"this session serves task t1, not t2", "hint: leave task out"}},
		{"argument a tool does not take", ToolGetTask, map[string]any{"tusk": "t1"}, []string{`unknown argument "tusk"`, "hint: get_task takes task, thread"}},
		{"bad subtask id to read", ToolGetSubtask, map[string]any{"subtask_id": "../st_1"}, []string{`subtask_id must be an id, not "../st_1"`}},
		{"output path through the id", ToolGetOutput, map[string]any{"subtask_id": "../../t2/outputs/st_1"}, []string{"subtask_id must be an id"}},
		{"review path through the id", ToolGetReview, map[string]any{"review_id": "../plan"}, []string{"review_id must be an id"}},
		{"plan version zero", ToolGetPlan, map[string]any{"version": 0}, []string{"version must be at least 1, not 0"}},
		{"plan version not a number", ToolGetPlan, map[string]any{"version": "2"}, []string{`version must be an integer, not "2"`}},
		{"plan version a fraction", ToolGetPlan, map[string]any{"version": 1.5}, []string{"version must be an integer, not 1.5"}},
		{"plan without subtasks", ToolWritePlan, map[string]any{"summary": "s"}, []string{"missing required argument subtasks"}},
		{"plan subtask without description", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_1"}}}, []string{"subtasks[0] lacks description"}},
		{"plan subtask with an unknown field", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_1", "description": "d", "owner": "me"}}},
			[]string{`subtasks[0] has unknown field "owner"`, "hint: it takes dependencies, description, estimated_complexity, id, max_retries, parallelizable"}},
		{"plan subtask complexity", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "st_1", "description": "d", "estimated_complexity": "huge"}}},
			[]string{`subtasks[0].estimated_complexity must be one of "low", "medium", "high", not "huge"`}},
		{"plan with a bad subtask id", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "../x", "description": "d"}}}, []string{`subtasks[0].id must be an id, not "../x"`}},
		{"plan with an unknown dependency", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "a", "description": "d", "dependencies": []string{"zz"}}}},
			[]string{"subtask a depends on unknown zz"}},
		{"plan with a duplicate subtask", ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "a", "description": "d"}, map[string]any{"id": "a", "description": "e"}}},
			[]string{"subtask a appears twice"}},
		{"plan setting its own version", ToolWritePlan, map[string]any{"subtasks": []any{}, "version": 9}, []string{`unknown argument "version"`}},
		{"review of no plan", ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}, []string{"task t1 has no plan to review yet", "hint: a planner writes it with write_plan"}},
		{"review type", ToolWriteReview, map[string]any{"type": "code_review", "verdict": "approved"}, []string{`type must be one of "plan_review", "checkpoint_review", "output_review", not "code_review"`}},
		{"review verdict", ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "fine"}, []string{`verdict must be one of "approved", "revision_needed", "rejected", not "fine"`}},
		{"checkpoint review without target", ToolWriteReview, map[string]any{"type": "checkpoint_review", "verdict": "approved"}, []string{"needs target", "hint: call get_task_state"}},
		{"output review without target", ToolWriteReview, map[string]any{"type": "output_review", "verdict": "approved"}, []string{"needs target", "hint: call get_task_state"}},
		{"review issue without problem", ToolWriteReview, map[string]any{"type": "output_review", "verdict": "approved", "target": "st_1", "issues": []any{map[string]any{"severity": "high"}}},
			[]string{"issues[0] lacks problem"}},
		{"review with a bad id", ToolWriteReview, map[string]any{"type": "output_review", "verdict": "approved", "target": "st_1", "review_id": "../../x"}, []string{"review_id must be an id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, isErr := call(t, cs, c.tool, c.args)
			if !isErr {
				t.Fatalf("no tool error; got %q", text)
			}
			for _, want := range c.want {
				if !strings.Contains(text, want) {
					t.Errorf("error text lacks %q:\n%s", want, text)
				}
			}
			// An agent calls tools: a command line means nothing to it.
			if strings.Contains(text, "--") || strings.Contains(text, "workspaced ") || strings.Contains(text, "`") {
				t.Errorf("error text names a command line:\n%s", text)
			}
			// The server keeps serving, and nothing was stored.
			var items []workspace.ManifestItem
			if err := json.Unmarshal([]byte(mustCall(t, cs, ToolListEnvData, map[string]any{})), &items); err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 || items[0].Key != "k" || items[0].Version != 2 {
				t.Fatalf("env changed by a failed call: %+v", items)
			}
		})
	}
	for _, rel := range []string{"tasks/t1/outputs", "memory/agents/observer", "tasks/t1/plan.json", "tasks/t1/plans", "tasks/t1/reviews"} {
		if exists(w, rel) {
			t.Errorf("%s written by a failed call", rel)
		}
	}
	if n := len(markers(t, w, ".claim.")) + len(markers(t, w, ".done.")); n != 0 {
		t.Errorf("%d markers written by failed calls", n)
	}
}

// Concurrent updates through one session are all applied: the key's lock
// serialises them and none is lost.
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	mustCall(t, cs, ToolStoreEnvData, map[string]any{"key": "counter", "short_description": "d", "value": 0})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolUpdateEnvData, Arguments: map[string]any{"key": "counter", "value": i}})
			if err != nil {
				errs <- err.Error()
			} else if res.IsError {
				errs <- res.Content[0].(*mcp.TextContent).Text
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if e := readEntry(t, w, "tasks/t1/env/counter.json"); e.Version != n+1 {
		t.Fatalf("version %d after %d updates, want %d", e.Version, n, n+1)
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	ctx := context.Background()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	if want := []string{"workspace://tasks/t1/env", "workspace://tasks/t1/state"}; !reflect.DeepEqual(uris, want) {
		t.Fatalf("resources = %v, want %v", uris, want)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.ResourceTemplates) != 2 {
		t.Fatalf("templates = %+v", tmpl.ResourceTemplates)
	}

	// No state yet: a protocol error with the code of a missing resource
	// (not the bare 0 of an unclassified error) and a message saying so;
	// then the state once written.
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "workspace://tasks/t1/state"})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || !strings.Contains(wire.Message, "task t1 has no state yet") ||
		!strings.Contains(string(wire.Data), `"uri":"workspace://tasks/t1/state"`) {
		t.Fatalf("read missing state: %#v", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "workspace://tasks/t9/env"})
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || !strings.Contains(wire.Message, "no such task") {
		t.Fatalf("read the env of an unknown task: %#v", err)
	}
	writeState(t, w)
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "workspace://tasks/t1/state"})
	if err != nil {
		t.Fatal(err)
	}
	var st workspace.State
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	if st.TaskID != "t1" || st.Subtasks["st_1"].Status != "pending" {
		t.Fatalf("state = %+v", st)
	}

	mustCall(t, cs, ToolStoreEnvData, map[string]any{"key": "arc_task", "short_description": "d", "value": 1})
	for _, uri := range []string{"workspace://tasks/t1/env", "workspace://tasks/t2/env"} {
		rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		var items []workspace.ManifestItem
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &items); err != nil {
			t.Fatal(err)
		}
		want := 1
		if strings.Contains(uri, "t2") {
			want = 0
		}
		if len(items) != want {
			t.Fatalf("%s: %d items, want %d", uri, len(items), want)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "workspace://tasks/t1/plans"}); err == nil {
		t.Fatal("read of an unknown resource succeeded")
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	cases := []struct {
		name       string
		opt        Options
		wantTask   string
		wantThread string
		wantErr    error
		wantText   string
	}{
		{"task alone serves its root thread", Options{TaskID: "t1", Agent: "a"}, "t1", "t1", nil, ""},
		{"thread alone finds its task", Options{ThreadID: "th_observer", Agent: "a"}, "t1", "th_observer", nil, ""},
		{"task and thread", Options{TaskID: "t1", ThreadID: "th_solver", Agent: "a"}, "t1", "th_solver", nil, ""},
		{"no agent", Options{TaskID: "t1"}, "", "", workspace.ErrInvalid, "no agent"},
		{"bad agent", Options{TaskID: "t1", Agent: "a b"}, "", "", workspace.ErrInvalid, "agent"},
		{"the whole workspace", Options{Agent: "a"}, "", "", nil, ""},
		{"bad task id", Options{TaskID: "../t1", Agent: "a"}, "", "", workspace.ErrInvalid, "task id"},
		{"unknown task", Options{TaskID: "t9", Agent: "a"}, "", "", workspace.ErrNotFound, "t9"},
		{"unknown thread", Options{ThreadID: "th_nope", Agent: "a"}, "", "", workspace.ErrNotFound, "th_nope"},
		{"thread of another task", Options{TaskID: "t1", ThreadID: "th_other", Agent: "a"}, "", "", workspace.ErrNotFound, "th_other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(w, c.opt)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.wantText) {
					t.Fatalf("err = %v, want %v containing %q", err, c.wantErr, c.wantText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Task() != c.wantTask || s.Thread() != c.wantThread || s.Agent() != c.opt.Agent {
				t.Fatalf("serving %s/%s/%s", s.Task(), s.Thread(), s.Agent())
			}
		})
	}
}

// Run returns nil when its context is cancelled.
func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	s, err := New(w, Options{TaskID: "t1", Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mustCall(t, cs, ToolListEnvData, map[string]any{})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

// TestErrorTextFaultHint: a tool failing on a full disk, a read-only
// filesystem, permissions or the open-files limit says how to fix the
// machine, after the error's own hint.
func TestErrorTextFaultHint(t *testing.T) {
	t.Parallel()
	enospc := &fs.PathError{Op: "write", Path: "tasks/t1/env/.k.json123", Err: syscall.ENOSPC}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"full disk", fmt.Errorf("store env k: %w", enospc), []string{"store env k: write", "\nhint: the filesystem is full"}},
		{"read-only", &fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, []string{"\nhint: the filesystem is mounted read-only"}},
		{"own hint kept", &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Msg: "bad", Hint: "give JSON", Field: workspace.FieldValue, Err: enospc},
			[]string{"\nhint: give JSON (argument value)\nhint: the filesystem is full"}},
		{"no fault", errors.New("plain"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorText(tc.err)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("ErrorText = %q, want it to contain %q", got, w)
				}
			}
			if tc.want == nil && strings.Contains(got, "hint:") {
				t.Errorf("ErrorText = %q, want no hint", got)
			}
		})
	}
}
