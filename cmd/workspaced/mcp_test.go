package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// TestMCPRealClient starts `workspaced mcp` as a subprocess and talks to it
// with the go-sdk client over the command's stdin/stdout, as an MCP client
// that launches the server does.
func TestMCPRealClient(t *testing.T) {
	w := newWS(t)
	w.task("t1")
	w.ok("thread", "new", "--task", "t1", "--id", "th_solver", "--from", "coordinator", "--to", "solver", "--message", "solve it")
	w.ok("thread", "new", "--task", "t1", "--id", "th_observer", "--parent", "th_solver", "--from", "solver", "--to", "observer", "--message", "patterns?")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "--root", w.root, "mcp", "--thread", "th_observer", "--agent", "observer")
	cmd.Dir, cmd.Env = w.dir, cleanEnv()
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

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	want := mcpserver.ToolNames()
	sort.Strings(names)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}

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
	data, err := os.ReadFile(filepath.Join(w.root, "tasks", "t1", "env", "arc_task.json"))
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
	if out := w.ok("env", "get", "--task", "t1", "--key", "arc_task"); !strings.Contains(out, `"training-001"`) {
		t.Fatalf("env get via the CLI: %s", out)
	}
	if out := w.ok("memory", "get", "--scope", "session", "--thread", "th_observer", "--key", "seen"); !strings.Contains(out, `"arc_task"`) {
		t.Fatalf("memory get via the CLI: %s", out)
	}
	w.ok("validate")

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
	w := newWS(t)
	w.task("t1")
	w.task("t2")
	w.ok("thread", "new", "--task", "t2", "--id", "th_two", "--from", "coordinator", "--to", "solver", "--message", "m")
	cases := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"no agent", exitUsage, "missing --agent", []string{"mcp", "--task", "t1"}},
		{"no task or thread", exitUsage, "missing --task T or --thread X", []string{"mcp", "--agent", "a"}},
		{"positional argument", exitUsage, "unexpected argument", []string{"mcp", "--task", "t1", "--agent", "a", "extra"}},
		{"bad agent id", exitFailure, `agent "a/b"`, []string{"mcp", "--task", "t1", "--agent", "a/b"}},
		{"bad task id", exitFailure, `task id "../t1"`, []string{"mcp", "--task", "../t1", "--agent", "a"}},
		{"unknown task", exitNotFound, "t9", []string{"mcp", "--task", "t9", "--agent", "a"}},
		{"unknown thread", exitNotFound, "th_nope", []string{"mcp", "--thread", "th_nope", "--agent", "a"}},
		{"thread of another task", exitNotFound, "th_two", []string{"mcp", "--task", "t1", "--thread", "th_two", "--agent", "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.t = t
			r := w.fails(c.code, c.want, c.args...)
			if !strings.Contains(r.stderr, "hint: ") {
				t.Errorf("no hint: %v", r)
			}
		})
	}
	t.Run("not a workspace", func(t *testing.T) {
		w.t = t
		w.fails(exitNotFound, "neither workspace.json nor tasks/", "--root", t.TempDir(), "mcp", "--task", "t1", "--agent", "a")
	})
	t.Run("help", func(t *testing.T) {
		w.t = t
		out := w.ok("mcp", "--help")
		for _, s := range append(mcpserver.ToolNames(), "Usage:", "Examples:", "Exit codes:") {
			if !strings.Contains(out, s) {
				t.Errorf("help lacks %q", s)
			}
		}
	})
}
