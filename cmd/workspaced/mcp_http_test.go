package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// addToken runs `workspaced token add` with args and returns the token.
func (w *ws) addToken(args ...string) string {
	w.T.Helper()
	tok, _ := w.AddToken(args...)
	return tok
}

// httpServer is one `workspaced mcp --http` process and the URL of its
// /mcp.
type httpServer struct {
	*clitest.Daemon
	url string
}

var reServing = regexp.MustCompile(`serving (https?://[^ ]+/mcp)`)

// mcpHTTP starts `workspaced mcp --http 127.0.0.1:0 extra...` and waits
// for the address it serves.
func (w *ws) mcpHTTP(extra ...string) *httpServer {
	w.T.Helper()
	url, d := w.Listen(reServing, append([]string{"mcp", "--http", "127.0.0.1:0"}, extra...)...)
	return &httpServer{d, url}
}

// TestMCPHTTPTwoAgents: two agents with two tokens, each through its own
// `workspaced mcp --http` process on one workspace, store 100 entries
// each at once: all 200 survive, each with its agent's stored_by, whatever
// the calls say.
func TestMCPHTTPTwoAgents(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	toks := map[string]string{
		"alpha": w.addToken("--agent", "alpha", "--task", "t1", "--may", "claim,done,plan,review"),
		"beta":  w.addToken("--agent", "beta", "--task", "t1"),
	}
	servers := map[string]*httpServer{"alpha": w.mcpHTTP(), "beta": w.mcpHTTP()}
	sessions := map[string]*mcp.ClientSession{}
	for agent, tok := range toks {
		cs, err := clitest.ConnectMCP(t, servers[agent].url, tok)
		if err != nil {
			t.Fatalf("connect %s: %v", agent, err)
		}
		sessions[agent] = cs
	}
	listsEveryTool(t, sessions["alpha"])
	// A token without rights is shown none of the tools that need one.
	tools, err := sessions["beta"].ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		switch tl.Name {
		case mcpserver.ToolClaimSubtask, mcpserver.ToolSignalDone, mcpserver.ToolWritePlan, mcpserver.ToolAmendPlan, mcpserver.ToolWriteReview:
			t.Errorf("a token without rights lists %s", tl.Name)
		}
	}
	if want := mcpserver.ToolNames(); len(tools.Tools) != len(want)-5 {
		t.Errorf("a token without rights lists %d tools, want %d", len(tools.Tools), len(want)-5)
	}
	const each = 100
	var wg sync.WaitGroup
	errs := make(chan string, 2*each)
	for agent, cs := range sessions {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolStoreEnvData,
					Arguments: map[string]any{"key": fmt.Sprintf("%s_%03d", agent, i), "short_description": "entry " + agent, "value": map[string]any{"i": i}}})
				switch {
				case err != nil:
					errs <- fmt.Sprintf("%s %d: %v", agent, i, err)
				case res.IsError:
					errs <- fmt.Sprintf("%s %d: %s", agent, i, res.Content[0].(*mcp.TextContent).Text)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var items []workspace.ManifestItem
	clitest.Decode(t, w.Ok("env", "list", "--task", "t1", "--json"), &items)
	by := map[string]int{}
	for _, it := range items {
		agent, _, _ := strings.Cut(it.Key, "_")
		if it.StoredBy != agent {
			t.Errorf("%s stored_by %s", it.Key, it.StoredBy)
		}
		by[it.StoredBy]++
	}
	if len(items) != 2*each || by["alpha"] != each || by["beta"] != each {
		t.Fatalf("%d entries, by agent %v; want %d of each", len(items), by, each)
	}
	// A call naming the other agent is refused, and writes nothing.
	res, err := sessions["alpha"].CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolStoreEnvData,
		Arguments: map[string]any{"key": "forged", "short_description": "d", "value": 1, "stored_by": "beta"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "you act as agent alpha; a call may not name another agent") {
		t.Fatalf("a forged call: %v %+v", err, res)
	}
	events := w.Ok("events", "--task", "t1")
	if strings.Count(events, "agent=alpha") < each || strings.Count(events, "agent=beta") < each || strings.Contains(events, "forged") {
		t.Errorf("events: %d by alpha, %d by beta", strings.Count(events, "agent=alpha"), strings.Count(events, "agent=beta"))
	}
	w.Ok("validate")
	// The log names the refusal and its agent.
	if log := servers["alpha"].Log.String(); !strings.Contains(log, "agent=alpha") || !strings.Contains(log, "may not name another agent") {
		t.Errorf("alpha's log: %s", log)
	}
}

// TestMCPHTTPRefusedAtStart: what `workspaced mcp` refuses before serving.
func TestMCPHTTPRefusedAtStart(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Task("t2")
	tok := w.addToken("--agent", "worker", "--task", "t1", "--may", "claim")
	tokFile := filepath.Join(w.Dir, "worker.token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(w.Dir, "empty.token")
	os.WriteFile(empty, nil, 0o600)
	bogus := filepath.Join(w.Dir, "bogus.token")
	os.WriteFile(bogus, []byte("wsd_bogus"), 0o600)
	cases := []failCase{
		{"plain HTTP off loopback", exitFailure, "not a loopback address, and no TLS", []string{"mcp", "--http", "0.0.0.0:0"}},
		{"every interface", exitFailure, "not a loopback address", []string{"mcp", "--http", ":0"}},
		{"cert without key", exitUsage, "--tls-cert and --tls-key go together", []string{"mcp", "--http", "127.0.0.1:0", "--tls-cert", "c.pem"}},
		{"not host:port", exitUsage, "is not host:port", []string{"mcp", "--http", "8080"}},
		{"task with --http", exitUsage, "--task is not used with --http", []string{"mcp", "--http", "127.0.0.1:0", "--task", "t1"}},
		{"agent with --http", exitUsage, "--agent is not used with --http", []string{"mcp", "--http", "127.0.0.1:0", "--agent", "a"}},
		{"http flags on stdio", exitUsage, "--insecure goes with --http", []string{"mcp", "--task", "t1", "--agent", "a", "--insecure"}},
		{"no sessions", exitUsage, "--max-sessions must be at least 1", []string{"mcp", "--http", "127.0.0.1:0", "--max-sessions", "0"}},
		{"unknown token", exitFailure, "the token is unknown or revoked", []string{"mcp", "--task", "t1", "--token-file", bogus}},
		{"empty token file", exitFailure, "it is empty", []string{"mcp", "--task", "t1", "--token-file", empty}},
		{"token of another agent", exitFailure, "the token stands for agent worker, not planner", []string{"mcp", "--task", "t1", "--token-file", tokFile, "--agent", "planner"}},
		{"token for another task", exitFailure, "agent worker may not work on task t2: its token covers t1", []string{"mcp", "--task", "t2", "--token-file", tokFile}},
	}
	failsWithHints(t, w, cases)
	t.Run("an agents file others may read", func(t *testing.T) {
		w.T = t
		path := filepath.Join(w.Root, "config", "tokens.json")
		os.Chmod(path, 0o644)
		defer os.Chmod(path, 0o600)
		w.Fails(exitFailure, "others than its owner may read or change it", "mcp", "--http", "127.0.0.1:0")
		w.Fails(exitFailure, "chmod 600", "token", "list")
	})
}

// TestMCPStdioToken: `workspaced mcp` over stdio with WORKSPACE_TOKEN
// acts as the token's agent (stamped on what it stores), with the
// token's rights only, until the token is revoked; on a directory root
// and on a sqlite: root.
func TestMCPStdioToken(t *testing.T) {
	t.Parallel()
	for _, store := range []struct {
		name string
		ws   func(t *testing.T) *ws
	}{
		{"files", newWS},
		{"sqlite", func(t *testing.T) *ws { w, _ := clitest.NewSQLite(t); return &ws{w} }},
	} {
		t.Run(store.name, func(t *testing.T) {
			w := store.ws(t)
			w.Task("t1")
			tok := w.addToken("--agent", "worker", "--task", "t1")
			cmd := clitest.Command("mcp", "--task", "t1")
			cmd.Dir, cmd.Env = w.Dir, append(w.Env, "WORKSPACE_TOKEN="+tok)
			stderr := &clitest.Log{}
			cmd.Stderr = stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v (%s)", err, stderr)
			}
			defer cs.Close()
			a := &mcpAgent{t: t, name: "worker", cs: cs, stderr: stderr}
			a.call(mcpserver.ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": 1})
			var e workspace.Entry
			clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "k", "--json"), &e)
			if e.StoredBy != "worker" {
				t.Fatalf("stored_by %q, want the token's agent", e.StoredBy)
			}
			if store.name == "files" {
				data, err := os.ReadFile(filepath.Join(w.Root, "tasks", "t1", "env", "k.json"))
				if err != nil || json.Unmarshal(data, &e) != nil || e.StoredBy != "worker" {
					t.Fatalf("entry: %s %v", data, err)
				}
			}
			if text, isErr := a.try(mcpserver.ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}); !isErr || !strings.Contains(text, "may not claim subtasks") {
				t.Fatalf("claim without the right: %s", text)
			}
			w.Ok("token", "revoke", "--agent", "worker")
			// The next call is refused, or, once the server's watch has
			// seen the revocation, the session is already over.
			res, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolListEnvData})
			refused := err == nil && res.IsError && len(res.Content) > 0 &&
				strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no longer valid")
			if !refused && err == nil {
				t.Fatalf("after the revocation: %v", res)
			}
			if !refused {
				clitest.Eventually(t, "the server saying why the session ended", func() (bool, string) {
					return strings.Contains(stderr.String(), "the token was revoked; the session is over"), stderr.String()
				})
			}
			if !strings.Contains(stderr.String(), "as agent worker") || !strings.Contains(stderr.String(), "with a token") {
				t.Fatalf("stderr: %s", stderr)
			}
		})
	}
}

// TestTokenCommand: add, list and revoke as a user runs them.
func TestTokenCommand(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	r := w.Run("token", "add", "--agent", "planner", "--all-tasks", "--may", "plan,review", "--global-memory", "read", "--note", "hosted")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "wsd_") || !strings.Contains(r.Stderr, "it is not shown again") {
		t.Fatalf("token add: %v", r)
	}
	tok := strings.TrimSpace(r.Stdout)
	raw, err := os.ReadFile(filepath.Join(w.Root, "config", "tokens.json"))
	if err != nil || strings.Contains(string(raw), tok) {
		t.Fatalf("the file holds the token: %s %v", raw, err)
	}
	out := w.Ok("token", "list")
	for _, s := range []string{"planner", "every task", "plan,review", "read", "hosted"} {
		if !strings.Contains(out, s) {
			t.Errorf("list lacks %q:\n%s", s, out)
		}
	}
	var items []struct {
		ID    string `json:"id"`
		Agent string `json:"agent"`
	}
	clitest.Decode(t, w.Ok("token", "list", "--json"), &items)
	if len(items) != 1 || items[0].Agent != "planner" {
		t.Fatalf("list --json: %+v", items)
	}
	w.Fails(exitUsage, "missing --task T (repeatable) or --all-tasks", "token", "add", "--agent", "a")
	w.Fails(exitUsage, `unknown right "admin"`, "token", "add", "--agent", "a", "--task", "t1", "--may", "admin")
	w.Fails(exitUsage, "--global-memory must be none, read or write", "token", "add", "--agent", "a", "--task", "t1", "--global-memory", "all")
	w.Fails(exitFailure, `agent "a/b"`, "token", "add", "--agent", "a/b", "--task", "t1")
	w.Fails(exitUsage, "give one of --id ID, --agent A or --ended", "token", "revoke")
	w.Fails(exitNotFound, "no such token", "token", "revoke", "--id", "tk_000000000000")
	if out := w.Ok("token", "revoke", "--id", items[0].ID); !strings.Contains(out, "revoked "+items[0].ID+" (agent planner)") {
		t.Fatalf("revoke: %s", out)
	}
	if out := w.Ok("token", "list"); !strings.Contains(out, "no tokens") {
		t.Fatalf("list after revoke: %s", out)
	}
}

// TestMCPHTTPTLS: with --tls-cert and --tls-key the server speaks HTTPS,
// and a client that trusts the certificate is served.
func TestMCPHTTPTLS(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "worker", "--task", "t1")
	certFile, keyFile, cert := clitest.SelfSignedCert(t, w.Dir)
	srv := w.mcpHTTP("--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(srv.url, "https://") {
		t.Fatalf("url %s", srv.url)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &mcp.StreamableClientTransport{Endpoint: srv.url, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: clitest.Bearer{Token: tok, Next: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tls", Version: "0"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect over TLS: %v (%s)", err, srv.Log)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolStoreEnvData,
		Arguments: map[string]any{"key": "k", "short_description": "d", "value": 1}})
	if err != nil || res.IsError {
		t.Fatalf("store over TLS: %v %+v", err, res)
	}
	// Plain HTTP to the TLS port is not served.
	resp, err := http.Post(strings.Replace(srv.url, "https://", "http://", 1), "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP answered 200")
		}
	}
}

// TestWebServesMCP: `workspaced web` on loopback serves the MCP tools at
// /mcp on its own listener, with the same token rules as `mcp --http`.
func TestWebServesMCP(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "remote", "--task", "t1", "--may", "claim,done,plan,review")
	p := w.web()
	clitest.Eventually(t, "web to say where MCP is served", func() (bool, string) {
		return strings.Contains(p.stderr.String(), p.url+"/mcp"), p.stderr.String()
	})
	resp, err := http.Post(p.url+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: %d, want 401", resp.StatusCode)
	}
	cs, err := clitest.ConnectMCP(t, p.url+"/mcp", tok)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if v, want := cs.InitializeResult().ServerInfo.Version, binaryVersion(t); v != want {
		t.Errorf("serverInfo.version = %q, want %q", v, want)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(mcpserver.ToolNames()) {
		t.Errorf("%d tools over the panel's /mcp, want %d", len(tools.Tools), len(mcpserver.ToolNames()))
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolStoreEnvData,
		Arguments: map[string]any{"key": "from_web", "short_description": "through the panel's listener", "value": 1}})
	if err != nil || res.IsError {
		t.Fatalf("store_env_data: %v %+v", err, res)
	}
	var e workspace.Entry
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "from_web", "--json"), &e)
	if e.StoredBy != "remote" {
		t.Errorf("stored_by = %q, want the token's agent", e.StoredBy)
	}
}
