package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// TestPostgresMCPTokens: on a postgres:// root the agents' tokens live in
// the database, and `token`, `mcp --http`, `mcp --token-file` and the
// panel's /mcp use them as on files: no token is 401, a token revoked or
// for another task is refused, and an entry's stored_by is the token's
// agent.
func TestPostgresMCPTokens(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	w := &ws{clitest.At(t, p.Root)}
	w.Task("t1")
	w.Task("t2")
	alpha := w.addToken("--agent", "alpha", "--task", "t1")
	beta := w.addToken("--agent", "beta", "--task", "t2")
	late := w.addToken("--agent", "late", "--task", "t1")
	ctx := context.Background()
	var n int
	if err := p.s.Pool().QueryRow(ctx, "SELECT count(*) FROM tokens WHERE doc LIKE '%' || $1 || '%' OR doc LIKE '%' || $2 || '%'", alpha, late).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a token itself is in the table: %d %v", n, err)
	}
	if out := w.Ok("token", "list"); !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") || !strings.Contains(out, "late") {
		t.Fatalf("token list: %s", out)
	}

	storedBy := func(task, key string) string {
		t.Helper()
		var e workspace.Entry
		clitest.Decode(t, w.Ok("env", "get", "--task", task, "--key", key, "--json"), &e)
		return e.StoredBy
	}
	for name, url := range map[string]string{"mcp --http": w.mcpHTTP().url, "web": func() string {
		pr := w.web()
		clitest.Eventually(t, "web to serve /mcp", func() (bool, string) {
			return strings.Contains(pr.stderr.String(), pr.url+"/mcp"), pr.stderr.String()
		})
		return pr.url + "/mcp"
	}()} {
		t.Run(name, func(t *testing.T) {
			w.T = t
			resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST without a token: %d, want 401", resp.StatusCode)
			}
			if _, err := clitest.ConnectMCP(t, url, "wsd_not_a_token"); err == nil {
				t.Error("an unknown token was let in")
			}
			if _, err := clitest.ConnectMCP(t, url+"?task=t1", beta); err == nil {
				t.Error("a token for t2 opened a session on t1")
			}
			cs, err := clitest.ConnectMCP(t, url, alpha)
			if err != nil {
				t.Fatalf("connect as alpha: %v", err)
			}
			key := "via_" + strings.ReplaceAll(name, " ", "_")[:3]
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolStoreEnvData,
				Arguments: map[string]any{"key": key, "short_description": "d", "value": 1}})
			if err != nil || res.IsError {
				t.Fatalf("store_env_data: %v %+v", err, res)
			}
			if by := storedBy("t1", key); by != "alpha" {
				t.Errorf("stored_by %q, want alpha", by)
			}
		})
	}
	w.T = t

	// Revoked while a session is open: the next call is refused.
	srv := w.mcpHTTP()
	cs, err := clitest.ConnectMCP(t, srv.url, late)
	if err != nil {
		t.Fatalf("connect as late: %v", err)
	}
	w.Ok("token", "revoke", "--agent", "late")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolListEnvData})
	if err == nil && !res.IsError {
		t.Fatalf("a revoked token still works: %+v", res)
	}
	if _, err := clitest.ConnectMCP(t, srv.url, late); err == nil {
		t.Error("a revoked token opened a session")
	}
	if out := w.Ok("token", "list"); strings.Contains(out, "late") {
		t.Errorf("token list after revoke: %s", out)
	}

	// mcp --token-file on stdio.
	tokFile := filepath.Join(w.Dir, "alpha.token")
	if err := os.WriteFile(tokFile, []byte(alpha+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Fails(exitFailure, "agent alpha may not work on task t2", "mcp", "--task", "t2", "--token-file", tokFile)
}
