package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/mcpserver"
)

// freeAddr is a loopback address no one listens on now: the resource's
// URL must be known before `mcp --http` starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// setOAuth writes the oauth settings into the workspace's workspace.json.
func (w *ws) setOAuth(settings map[string]any) {
	w.T.Helper()
	path := filepath.Join(w.Root, "workspace.json")
	doc := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &doc); err != nil {
			w.T.Fatal(err)
		}
	}
	doc["oauth"] = settings
	data, _ := json.Marshal(doc)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		w.T.Fatal(err)
	}
}

// getStatus is the status of GET url.
func getStatus(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// TestMCPOAuth: `workspaced mcp --http` with oauth in workspace.json is a
// resource server of a real OpenID provider started here: it serves its
// metadata, names it in its 401, and a token the provider issued for it
// opens a session as the agent of its subject; a server without OAuth
// advertises none. The official TypeScript SDK's OAuth client (client
// credentials) then connects with no token of its own: it finds the
// provider through the metadata, gets a token and works as its agent.
func TestMCPOAuth(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	p.Register(oidctest.Client{ID: "worker", Secret: "worker-secret", Audience: []string{resource}})
	p.Register(oidctest.Client{ID: "stranger", Secret: "s", Audience: []string{"https://elsewhere.example.com/mcp"}})
	w := newWS(t)
	w.Task("t1")
	w.setOAuth(map[string]any{"issuer": p.URL, "resource": resource})
	url, d := w.Listen(reServing, "mcp", "--http", addr)
	srv := &httpServer{d, url}
	if log := srv.Log.String(); !strings.Contains(log, "OAuth resource server for "+resource) {
		t.Errorf("the start-up lines do not say OAuth: %s", log)
	}

	meta := "http://" + addr + "/.well-known/oauth-protected-resource/mcp"
	code, body := getStatus(t, meta)
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc.Resource != resource || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != p.URL {
		t.Fatalf("GET %s: %d %s", meta, code, body)
	}
	resp, err := http.Post(srv.url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || ch != `Bearer resource_metadata="`+meta+`"` {
		t.Errorf("no token: %d, WWW-Authenticate %q", resp.StatusCode, ch)
	}

	cs, err := clitest.ConnectMCP(t, srv.url+"?task=t1", p.Token(t, "worker", "workspace:task:t1", "workspace:claim"))
	if err != nil {
		t.Fatalf("connect with the provider's token: %v\n%s", err, srv.Log)
	}
	if got := cs.InitializeResult().Instructions; !strings.Contains(got, `You are agent "worker"`) {
		t.Errorf("instructions: %s", got)
	}

	t.Run("the HTTP API", func(t *testing.T) {
		base := "http://" + addr + "/api/v1/tasks/"
		for name, c := range map[string]struct {
			token, path string
			status      int
			challenge   string
		}{
			"a token for this server":  {p.Token(t, "worker", "workspace:task:t1"), "t1", http.StatusOK, ""},
			"a task it does not cover": {p.Token(t, "worker", "workspace:task:t2"), "t1", http.StatusForbidden, ""},
			"no token":                 {"", "t1", http.StatusUnauthorized, `Bearer resource_metadata="` + meta + `"`},
			"another audience":         {p.Token(t, "stranger", "workspace:task:t1"), "t1", http.StatusUnauthorized, `error="invalid_token", error_description="the access token is refused: issued for`},
			"no task granted":          {p.Token(t, "worker", "workspace:claim"), "t1", http.StatusForbidden, `error="insufficient_scope"`},
		} {
			req, _ := http.NewRequest(http.MethodGet, base+c.path, nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			ch := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != c.status || !strings.Contains(ch, c.challenge) || (c.challenge != "" && !strings.Contains(ch, "resource_metadata=")) {
				t.Errorf("%s: %d, WWW-Authenticate %q, %s", name, resp.StatusCode, ch, b.String())
			}
		}
	})

	t.Run("static tokens advertise no OAuth", func(t *testing.T) {
		plain := newWS(t)
		s := plain.mcpHTTP()
		base := strings.TrimSuffix(s.url, "/mcp")
		if code, _ := getStatus(t, base+"/.well-known/oauth-protected-resource"); code != http.StatusNotFound {
			t.Errorf("metadata without OAuth: %d", code)
		}
		resp, err := http.Post(s.url, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(ch, "resource_metadata") {
			t.Errorf("401 without OAuth: %d, %q", resp.StatusCode, ch)
		}
		resp, err = http.Get(base + "/api/v1/tasks")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(ch, "resource_metadata") {
			t.Errorf("the API's 401 without OAuth: %d, %q", resp.StatusCode, ch)
		}
	})

	t.Run("typescript sdk, client credentials", func(t *testing.T) {
		out := runTSOAuth(t, srv, p.URL, "credentials", `{"id":"worker","secret":"worker-secret","scope":"workspace:task:t1 workspace:claim workspace:done"}`)
		if !strings.Contains(out.Instructions, `You are agent "worker"`) || !strings.Contains(out.List, `"stored_by":"worker"`) || !strings.EqualFold(out.TokenType, "bearer") {
			t.Errorf("the TypeScript client: %+v", out)
		}
		for _, tool := range out.Tools {
			if tool == mcpserver.ToolWritePlan || tool == mcpserver.ToolWriteReview {
				t.Errorf("tools listed without their scope: %v", out.Tools)
			}
		}
		if !out.Plan.IsError || !strings.Contains(out.Plan.Text, `does not hold the right "plan"`) {
			t.Errorf("write_plan without its scope: %+v", out.Plan)
		}
	})
	t.Run("typescript sdk, authorization code", func(t *testing.T) {
		redirect := "http://127.0.0.1:9/callback"
		p.RegisterNative(oidctest.Native{ID: "desktop", RedirectURI: redirect, Audience: []string{resource}})
		out := runTSOAuth(t, srv, p.URL, "code", `{"id":"desktop","redirect_uri":"`+redirect+`"}`)
		agent := oidctest.UserSubject
		if !strings.Contains(out.Instructions, `You are agent "`+agent+`"`) || !strings.Contains(out.List, `"stored_by":"`+agent+`"`) || out.Plan.IsError {
			t.Errorf("the TypeScript client: %+v", out)
		}
		// The client asked for this server (RFC 8707) with PKCE, and the
		// scopes the metadata lists; the browser went through the login.
		if a := out.Authorization; a.Resource != resource || a.CodeChallengeMethod != "S256" || !strings.Contains(a.Scope, "workspace:task:*") {
			t.Errorf("the authorization request: %+v", a)
		}
		if !strings.Contains(strings.Join(out.Browsed, " "), "/login/username") {
			t.Errorf("the browser's way: %v", out.Browsed)
		}
	})
}

// TestMCPOAuthRefusedAtStart: an OAuth configuration that cannot work is
// said before serving, with a hint.
func TestMCPOAuthRefusedAtStart(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	down := "http://" + freeAddr(t)
	failsWithHints(t, w, []failCase{
		{"resource without issuer", exitUsage, "--oauth-resource goes with an OAuth issuer", []string{"mcp", "--http", "127.0.0.1:0", "--oauth-resource", "http://127.0.0.1:1/mcp"}},
		{"no resource", exitFailure, "oauth.resource is missing", []string{"mcp", "--http", "127.0.0.1:0", "--oauth-issuer", down}},
		{"plain http issuer", exitFailure, "is not https", []string{"mcp", "--http", "127.0.0.1:0", "--oauth-issuer", "http://auth.example.com", "--oauth-resource", "https://mcp.example.com/mcp"}},
		{"issuer down", exitFailure, "discover the keys of " + down, []string{"mcp", "--http", "127.0.0.1:0", "--oauth-issuer", down, "--oauth-resource", "http://127.0.0.1:1/mcp"}},
		{"oauth on stdio", exitUsage, "--oauth-issuer goes with --http", []string{"mcp", "--task", "t1", "--agent", "a", "--oauth-issuer", down}},
	})
}

// tsOAuth is what oauth.mjs printed.
type tsOAuth struct {
	Tools         []string `json:"tools"`
	Instructions  string   `json:"instructions"`
	Store         string   `json:"store"`
	List          string   `json:"list"`
	Authorization struct {
		Resource            string `json:"resource"`
		CodeChallengeMethod string `json:"code_challenge_method"`
		Scope               string `json:"scope"`
	} `json:"authorization"`
	Browsed []string `json:"browsed"`
	Plan    struct {
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
	} `json:"plan"`
	TokenType string `json:"token_type"`
}

// runTSOAuth runs oauth.mjs in mode against srv with the client's
// credentials (JSON) and decodes what it printed.
func runTSOAuth(t *testing.T, srv *httpServer, issuer, mode, client string) tsOAuth {
	t.Helper()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "oauth.mjs", mode, srv.url, "t1", issuer)
	cmd.Dir, cmd.Env = tsClientDir, append(clitest.CleanEnv(), "OAUTH_CLIENT="+client)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node oauth.mjs %s: %v\nstdout:\n%s\nstderr:\n%s\nserver:\n%s", mode, err, stdout.String(), stderr.String(), srv.Log)
	}
	var out tsOAuth
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node oauth.mjs %s printed %q: %v", mode, stdout.String(), err)
	}
	return out
}
