package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// newOAuthFixture serves the fixture at /mcp in OAuth resource-server
// mode, for the access tokens of p whose audience is the endpoint's URL.
func newOAuthFixture(t *testing.T, p *oidctest.Provider) (*httpFixture, string) {
	t.Helper()
	f := &httpFixture{t: t, w: fixture(t), log: &syncLog{}}
	f.srv = httptest.NewUnstartedServer(nil)
	resource := "http://" + f.srv.Listener.Addr().String() + "/mcp"
	v, err := oauth.New(context.Background(), oauth.Config{OAuthSettings: workspace.OAuthSettings{Issuer: p.URL, Resource: resource}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tokens.NewStore(f.w.Root())
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = NewHTTP(f.w, toks, HTTPOptions{Log: slog.New(slog.NewTextHandler(f.log, nil)), OAuth: v, WatchEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.h)
	v.Mount(mux)
	f.srv.Config.Handler = mux
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f, resource
}

// TestHTTPOAuth: in OAuth resource-server mode a 401 names the Protected
// Resource Metadata, which names the provider; the provider's token for
// this server opens a session as the agent its claims name, with the
// rights its scopes give; tokens for another audience, expired, of
// another issuer are refused with invalid_token, a valid token granting
// no task with insufficient_scope; the agents file's tokens still work.
func TestHTTPOAuth(t *testing.T) {
	p := oidctest.Start(t)
	f, resource := newOAuthFixture(t, p)
	other := oidctest.Start(t)
	p.Register(oidctest.Client{ID: "worker", Secret: "s", Audience: []string{resource}})
	p.Register(oidctest.Client{ID: "stranger", Secret: "s", Audience: []string{"https://elsewhere.example.com/mcp"}})
	p.Register(oidctest.Client{ID: "late", Secret: "s", Audience: []string{resource}, Lifetime: -time.Minute})
	other.Register(oidctest.Client{ID: "worker", Secret: "s", Audience: []string{resource}})
	metaURL := strings.Replace(resource, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)

	t.Run("401 names the metadata", func(t *testing.T) {
		resp := post(t, f.srv.URL+"/mcp", "")
		got := resp.Header.Values("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || len(got) != 1 || got[0] != `Bearer resource_metadata="`+metaURL+`"` {
			t.Fatalf("%d, WWW-Authenticate %q", resp.StatusCode, got)
		}
	})
	t.Run("metadata", func(t *testing.T) {
		resp, err := http.Get(metaURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Resource != resource || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != p.URL {
			t.Fatalf("%v: %+v", err, doc)
		}
	})
	t.Run("a token for this server", func(t *testing.T) {
		cs := f.mustConnect(p.Token(t, "worker", "workspace:task:t1", "workspace:claim"), "task=t1")
		if got := cs.InitializeResult().Instructions; !strings.Contains(got, `You are agent "worker", working on task "t1"`) {
			t.Fatalf("instructions: %s", got)
		}
		if text, isErr := callHTTP(t, cs, ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": 1}); isErr {
			t.Fatalf("store_env_data: %s", text)
		}
		if text, _ := callHTTP(t, cs, ToolListEnvData, nil); !strings.Contains(text, `"stored_by":"worker"`) {
			t.Errorf("list_env_data: %s", text)
		}
		if text, isErr := callHTTP(t, cs, ToolStoreMemory, map[string]any{"key": "g", "value": "x", "scope": "global"}); !isErr || !strings.Contains(text, "may not write the global memory") {
			t.Errorf("global memory without its scope: %s", text)
		}
		if text, isErr := callHTTP(t, cs, ToolWritePlan, map[string]any{"subtasks": []any{}}); !isErr || !strings.Contains(text, `does not hold the right "plan"`) {
			t.Errorf("write_plan without its scope: %s", text)
		}
		if _, err := f.connect(p.Token(t, "worker", "workspace:task:t1"), "task=t2"); err == nil || !strings.Contains(err.Error(), "may not work on task t2") {
			t.Errorf("another task: %v", err)
		}
		// The watch that ends the sessions of revoked tokens leaves an
		// access token's session alone: once it has ended a revoked
		// token's session, the OAuth session still works.
		revoked := f.mustConnect(f.token(tokens.Grant{Agent: "gone", Tasks: []string{"t1"}}), "task=t1")
		if _, err := tokens.Revoke(context.Background(), tokens.Tree(f.w), "", "gone"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the revoked token's session to end", func() bool {
			_, err := revoked.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolGetTask})
			return err != nil && f.h.Sessions() == 1
		})
		if text, isErr := callHTTP(t, cs, ToolGetTask, nil); isErr {
			t.Errorf("the OAuth session after the watch: %s", text)
		}
	})
	t.Run("the session is the identity's", func(t *testing.T) {
		p.Register(oidctest.Client{ID: "intruder", Secret: "s", Audience: []string{resource}})
		tok := &swapToken{}
		tok.Store(p.Token(t, "worker", "workspace:task:t1"))
		cs, err := clientOver(f, tok)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		// A new token of the same subject (a refresh) goes on with the
		// session; one of another subject may not use it.
		tok.Store(p.Token(t, "worker", "workspace:task:t1"))
		if text, isErr := callHTTP(t, cs, ToolGetTask, nil); isErr {
			t.Fatalf("a refreshed token: %s", text)
		}
		tok.Store(p.Token(t, "intruder", "workspace:task:t1"))
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolGetTask}); err == nil {
			t.Fatal("another identity used the session")
		}
	})
	for name, c := range map[string]struct {
		token func(t *testing.T) string
		says  string
	}{
		"another audience": {func(t *testing.T) string { return p.Token(t, "stranger", "workspace:task:t1") }, "issued for"},
		"expired":          {func(t *testing.T) string { return p.Token(t, "late", "workspace:task:t1") }, "expired at"},
		"another issuer":   {func(t *testing.T) string { return other.Token(t, "worker", "workspace:task:t1") }, "the access token is refused"},
	} {
		t.Run(name, func(t *testing.T) {
			tok := c.token(t)
			resp := post(t, f.srv.URL+"/mcp", tok)
			ch := resp.Header.Get("WWW-Authenticate")
			body := readAll(resp)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `resource_metadata="`+metaURL+`"`) || !strings.Contains(ch, `error="invalid_token"`) ||
				!strings.Contains(body, c.says) {
				t.Fatalf("%d, WWW-Authenticate %q, body %q", resp.StatusCode, ch, body)
			}
			if _, err := f.connect(tok, "task=t1"); err == nil {
				t.Fatal("the client connected")
			}
			if strings.Contains(f.log.String(), tok) {
				t.Fatal("the log shows the token")
			}
		})
	}
	t.Run("a token granting no task", func(t *testing.T) {
		resp := post(t, f.srv.URL+"/mcp", p.Token(t, "worker", "workspace:claim"))
		ch := resp.Header.Get("WWW-Authenticate")
		if body := readAll(resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `workspace:task:*`) ||
			!strings.Contains(body, "grants no task") {
			t.Fatalf("%d, WWW-Authenticate %q, body %q", resp.StatusCode, ch, body)
		}
	})
	t.Run("the agents file's tokens", func(t *testing.T) {
		cs := f.mustConnect(f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}}), "task=t1")
		if text, isErr := callHTTP(t, cs, ToolGetTask, nil); isErr {
			t.Fatal(text)
		}
		resp := post(t, f.srv.URL+"/mcp", "wsd_unknown")
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, "resource_metadata=") {
			t.Fatalf("an unknown token: %d, WWW-Authenticate %q", resp.StatusCode, ch)
		}
	})
}

// TestHTTPStaticTokensAdvertiseNoOAuth: without OAuth, neither a 401
// nor any path names OAuth metadata, so that clients which prefer
// discovery keep to the configured header.
func TestHTTPStaticTokensAdvertiseNoOAuth(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	for _, tok := range []string{"", "wsd_unknown", "a.b.c"} {
		resp := post(t, f.srv.URL+"/mcp", tok)
		if ch := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(strings.Join(ch, " "), "resource_metadata") {
			t.Errorf("token %q: %d, WWW-Authenticate %q", tok, resp.StatusCode, ch)
		}
	}
}

// post sends an initialize request with token, if any.
func post(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(resp *http.Response) string {
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// swapToken is a bearer token a test changes between requests.
type swapToken struct{ atomic.Value }

func (s *swapToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.Load().(string))
	return http.DefaultTransport.RoundTrip(r)
}

// clientOver opens a session of task t1 whose requests carry tok's
// token of the moment.
func clientOver(f *httpFixture, tok *swapToken) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp?task=t1", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: tok}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
}
