package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
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
	t.Parallel()
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
	t.Parallel()
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
