package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestOneVocabulary: the CLI, MCP and the HTTP API speak of the same
// things by the same names — the memory scopes (the old spellings refused
// with a hint naming the new one), which fields a write needs, a marker's
// write that waits for the daemon's verdict — and each door's preamble
// names its own calls.
func TestOneVocabulary(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	for _, id := range []string{"t1", "t_cli", "t_mcp", "t_api"} {
		w.Task(id)
	}
	w.Ok("thread", "new", "--task", "t1", "--id", "th_solver", "--from", "coordinator", "--to", "solver", "--message", "solve it")
	w.Ok("thread", "new", "--thread", "th_solver", "--id", "th_obs", "--from", "solver", "--to", "observer", "--message", "look")
	tok := w.addToken("--agent", "agent_a", "--task", "*", "--may", "plan,review,claim,done", "--global-memory", "write")
	srv := w.mcpHTTP()
	w.serve()
	cs, err := clitest.ConnectMCP(t, srv.url, tok) // no task: the whole workspace
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(srv.url, "/mcp") + "/api/v1"
	api := func(method, path string, body any) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(data)
	}
	tool := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}

	t.Run("memory scopes", func(t *testing.T) {
		for _, c := range []struct {
			scope, apiPath string
			renamed        string // the new name of an old spelling
		}{
			{"agent", "/memory/agents/agent_a/k", ""},
			{"global", "/memory/global/k", ""},
			{"session", "/tasks/t1/threads/th_obs/session/k", ""},
			{"po", "/memory/po/k", "agent"},
			{"env", "/memory/env/k", "global"},
		} {
			args := []string{"memory", "store", "--scope", c.scope, "--agent", "agent_a", "--key", "k", "--value", "1"}
			margs := map[string]any{"scope": c.scope, "key": "k", "value": 1}
			if c.scope == "session" {
				args = append(args, "--thread", "th_obs")
				margs["thread"] = "th_obs"
			}
			text, isErr := tool("store_memory", margs)
			code, body := api("PUT", c.apiPath, map[string]any{"value": 1})
			if c.renamed == "" {
				w.Ok(args...)
				if isErr || code != http.StatusOK {
					t.Errorf("scope %s: MCP %v %q; API %d %s", c.scope, isErr, text, code, body)
				}
				continue
			}
			r := w.Fails(exitUsage, "use the scope "+c.renamed, args...)
			if !strings.Contains(r.Stderr, c.scope+" is now "+c.renamed) {
				t.Errorf("CLI scope %s: %s", c.scope, r.Stderr)
			}
			if !isErr || !strings.Contains(text, `scope must be one of "agent", "session", "global", not "`+c.scope+`"`) {
				t.Errorf("MCP scope %s: %v %q", c.scope, isErr, text)
			}
			if code != http.StatusNotFound {
				t.Errorf("API %s: %d %s", c.apiPath, code, body)
			}
		}
	})

	t.Run("required fields", func(t *testing.T) {
		// A description is the manifest's, never required: the same
		// store, without one, through each door.
		w.Ok("env", "store", "--task", "t1", "--key", "cli", "--value", "1", "--agent", "agent_a")
		w.Ok("memory", "store", "--scope", "agent", "--agent", "agent_a", "--key", "cli", "--value", "1")
		for name, args := range map[string]map[string]any{
			"store_env_data": {"task": "t1", "key": "mcp", "value": 1},
			"store_memory":   {"key": "mcp", "value": 1},
		} {
			if text, isErr := tool(name, args); isErr {
				t.Errorf("%s without a description: %s", name, text)
			}
		}
		for _, p := range []string{"/tasks/t1/env/api", "/memory/agents/agent_a/api"} {
			if code, body := api("PUT", p, map[string]any{"value": 1}); code != http.StatusOK {
				t.Errorf("PUT %s without a description: %d %s", p, code, body)
			}
		}
		// The value is required by each.
		w.Fails(exitUsage, "missing --value", "env", "store", "--task", "t1", "--key", "x", "--agent", "agent_a")
		if text, isErr := tool("store_env_data", map[string]any{"task": "t1", "key": "x"}); !isErr || !strings.Contains(text, "missing required argument value") {
			t.Errorf("store_env_data without a value: %v %q", isErr, text)
		}
		if code, body := api("PUT", "/tasks/t1/env/x", map[string]any{}); code != http.StatusBadRequest || !strings.Contains(body, "no value") {
			t.Errorf("PUT without a value: %d %s", code, body)
		}
	})

	t.Run("waiting for the verdict", func(t *testing.T) {
		plan := `{"subtasks":[{"id":"s1","description":"do it"}]}`
		review := map[string]any{"type": "plan_review", "verdict": "approved"}
		// CLI
		out := w.OkIn(plan, "plan", "write", "--task", "t_cli", "--file", "-", "--agent", "agent_a", "--propose", "--wait", "30s")
		if !strings.Contains(out.Stdout, "applied") {
			t.Errorf("plan write --propose --wait: %s", out)
		}
		rj, _ := json.Marshal(review)
		out = w.OkIn(string(rj), "review", "write", "--task", "t_cli", "--id", "plan_v1", "--file", "-", "--agent", "agent_a", "--done", "--wait")
		if !strings.Contains(out.Stdout, "applied") || !strings.Contains(out.Stdout, "executing") {
			t.Errorf("review write --done --wait: %s", out)
		}
		w.Fails(exitUsage, "--wait goes with --propose", "plan", "write", "--task", "t_cli", "--file", "-", "--wait")
		// MCP: the tools wait, and say the verdict to a model.
		if text, isErr := tool("write_plan", map[string]any{"task": "t_mcp", "subtasks": []any{map[string]any{"id": "s1", "description": "do it"}}}); isErr || !strings.Contains(text, "The workspace daemon accepted it") {
			t.Errorf("write_plan: %v %q", isErr, text)
		}
		if text, isErr := tool("write_review", map[string]any{"task": "t_mcp", "type": "plan_review", "verdict": "approved"}); isErr || !strings.Contains(text, "The workspace daemon accepted it") {
			t.Errorf("write_review: %v %q", isErr, text)
		}
		// HTTP API: ?propose=true&wait=, ?done=true&wait=.
		if code, body := api("POST", "/tasks/t_api/plan?propose=true&wait=30s", json.RawMessage(plan)); code != http.StatusOK || !strings.Contains(body, `"applied"`) {
			t.Errorf("POST plan?propose=true&wait=30s: %d %s", code, body)
		}
		if code, body := api("PUT", "/tasks/t_api/reviews/plan_v1?done=true&wait=30s", review); code != http.StatusOK || !strings.Contains(body, `"applied"`) {
			t.Errorf("PUT review?done=true&wait=30s: %d %s", code, body)
		}
	})

	t.Run("the preamble names the door's calls", func(t *testing.T) {
		if got := w.Ok("preamble", "--thread", "th_obs"); !strings.Contains(got, "run `workspaced env list --task t1` to see") {
			t.Errorf("CLI preamble: %s", got)
		}
		if got := w.Ok("preamble", "--thread", "th_obs", "--for", "files"); !strings.Contains(got, "read tasks/t1/env/") {
			t.Errorf("CLI preamble --for files: %s", got)
		}
		if text, isErr := tool("get_delegation_context", map[string]any{"thread": "th_obs"}); isErr || !strings.Contains(text, "call list_env_data() to see") {
			t.Errorf("MCP get_delegation_context: %v %q", isErr, text)
		}
		if code, body := api("GET", "/threads/th_obs/preamble", nil); code != http.StatusOK || !strings.Contains(body, "GET /api/v1/tasks/t1/env to see") {
			t.Errorf("API preamble: %d %s", code, body)
		}
	})

	t.Run("the system context names the door's calls", func(t *testing.T) {
		w.Ok("env", "store", "--task", "t1", "--key", "grid", "--value", "1")
		cli := w.Ok("system-context", "--agent", "observer", "--task", "t1")
		if !strings.Contains(cli, "run `workspaced env list --task t1` to see") || !strings.Contains(cli, "  - `workspaced claim --task t1 --agent observer --subtask S`: ") {
			t.Errorf("CLI system context: %s", cli)
		}
		// A CLI agent is told of no call of MCP's.
		for _, name := range []string{"list_env_data", "store_env_data", "get_delegation_context", "list_capabilities", "claim_subtask", "get_plan"} {
			if strings.Contains(cli, name) {
				t.Errorf("the CLI system context names the MCP tool %s:\n%s", name, cli)
			}
		}
		if text, isErr := tool("list_capabilities", map[string]any{}); isErr || !strings.Contains(text, "  - list_env_data: ") || strings.Contains(text, "workspaced env") {
			t.Errorf("MCP list_capabilities: %v %q", isErr, text)
		}
		code, body := api("GET", "/agent/system-context?task=t1", nil)
		if code != http.StatusOK || !strings.Contains(body, "GET /api/v1/tasks/t1/env to see") || strings.Contains(body, "list_env_data") {
			t.Errorf("API system context: %d %s", code, body)
		}
	})
}
