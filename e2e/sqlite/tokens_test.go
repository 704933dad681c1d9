package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestTokensOverMCP: token add on a sqlite: root keeps only the token's
// hash; the panel's /mcp and mcp --http both take the token (its agent
// stamped on what it stores), refuse a request without one and a task
// the token does not cover, and refuse it once revoked.
func TestTokensOverMCP(t *testing.T) {
	w, db := clitest.NewSQLite(t)
	w.Task("t1")
	w.Task("t2")
	tok, id := w.AddToken("--agent", "remote", "--task", "t1", "--may", "claim,done")
	if out := w.Ok("token", "list"); !strings.Contains(out, id) || !strings.Contains(out, "remote") || strings.Contains(out, tok) {
		t.Errorf("token list:\n%s", out)
	}
	for _, f := range []string{db, db + "-wal"} {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(tok)) {
			t.Errorf("%s holds the token itself", f)
		}
	}

	panel, _ := w.Listen(regexp.MustCompile(`(http://127\.0\.0\.1:\d+/mcp)`), "web", "--listen", "127.0.0.1:0")
	direct, _ := w.Listen(regexp.MustCompile(`serving (http://[^ ]+/mcp)`), "mcp", "--http", "127.0.0.1:0")
	for i, url := range []string{panel, direct} {
		res, err := http.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a token: %d, want 401", url, res.StatusCode)
		}
		cs, err := clitest.ConnectMCP(t, url, tok)
		if err != nil {
			t.Fatalf("connect to %s: %v", url, err)
		}
		key := []string{"from_panel", "from_mcp_http"}[i]
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "store_env_data",
			Arguments: map[string]any{"key": key, "short_description": "over " + url, "value": i}})
		if err != nil || r.IsError {
			t.Fatalf("store_env_data over %s: %v %+v", url, err, r)
		}
		var e workspace.Entry
		clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", key, "--json"), &e)
		if e.StoredBy != "remote" {
			t.Errorf("stored_by %q over %s, want the token's agent", e.StoredBy, url)
		}
		if _, err := clitest.ConnectMCP(t, url+"?task=t2", tok); err == nil {
			t.Errorf("a session on t2, which the token does not cover, opened over %s", url)
		}
	}
	w.Ok("token", "revoke", "--id", id)
	for _, url := range []string{panel, direct} {
		if _, err := clitest.ConnectMCP(t, url, tok); err == nil {
			t.Errorf("a revoked token opened a session over %s", url)
		}
	}
	if out := w.Ok("token", "list"); strings.Contains(out, id) {
		t.Errorf("token list after the revoke:\n%s", out)
	}
}

// TestTokenAddRefusesBadInput: token add on a sqlite: root refuses a
// hostile agent name and a task id that is SQL, and stores nothing.
func TestTokenAddRefusesBadInput(t *testing.T) {
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Fails(1, "agent", "token", "add", "--agent", "'); DROP TABLE tokens; --", "--task", "t1")
	w.Fails(1, "task", "token", "add", "--agent", "a", "--task", "t1'; DROP TABLE tasks; --")
	sc := bufio.NewScanner(strings.NewReader(w.Ok("token", "list", "--json")))
	sc.Scan()
	if got := strings.TrimSpace(sc.Text()); got != "[]" {
		t.Errorf("token list after refused adds: %s", got)
	}
	w.Ok("task", "show", "--task", "t1")
}

// TestMCPStdioToken: mcp on stdio with $WORKSPACE_TOKEN on a sqlite:
// root is the token's agent, held to its rights, and refused from the
// call after a revoke.
func TestMCPStdioToken(t *testing.T) {
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	tok, _ := w.AddToken("--agent", "worker", "--task", "t1")
	cmd := exec.Command(clitest.Bin(), "mcp", "--task", "t1")
	cmd.Dir, cmd.Env = w.Dir, append(w.Env, "WORKSPACE_TOKEN="+tok)
	stderr := &clitest.Log{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (%s)", err, stderr)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v (%s)", tool, err, stderr)
		}
		var text strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String(), r.IsError
	}
	if text, isErr := call("store_env_data", map[string]any{"key": "k", "short_description": "d", "value": 1}); isErr {
		t.Fatalf("store_env_data: %s", text)
	}
	var e workspace.Entry
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "k", "--json"), &e)
	if e.StoredBy != "worker" {
		t.Errorf("stored_by %q, want the token's agent", e.StoredBy)
	}
	if text, isErr := call("claim_subtask", map[string]any{"subtask_id": "st_1"}); !isErr || !strings.Contains(text, "may not claim subtasks") {
		t.Errorf("claim without the right: %s", text)
	}
	w.Ok("token", "revoke", "--agent", "worker")
	if text, isErr := call("list_env_data", nil); !isErr || !strings.Contains(text, "no longer valid") {
		t.Errorf("after the revoke: %s", text)
	}
}
