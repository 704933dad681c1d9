package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/internal/poll"
)

// TestListenersOAuth: `serve --listen` and `web` accept on their HTTP API
// the access tokens a real OpenID provider issues, as `mcp --http` does,
// with --oauth-resource naming each listener's own URL (the issuer and the
// claims mapping from workspace.json): the metadata is served, a request
// without a token gets the 401 that names it (the loopback is no longer
// trusted), a token for this listener acts as its subject's agent, and a
// token for another audience, an expired one and one granting another
// task are refused.
func TestListenersOAuth(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	w := newWS(t)
	w.Task("t1")
	w.setOAuth(map[string]any{"issuer": p.URL, "resource": "https://mcp.example.com/mcp"})
	serveAddr, webAddr := freeAddr(t), freeAddr(t)
	w.serve("--listen", serveAddr, "--oauth-resource", "http://"+serveAddr+"/api/v1")
	w.web("--listen", webAddr, "--oauth-resource", "http://"+webAddr+"/api/v1")
	for _, l := range []struct{ name, addr string }{{"serve", serveAddr}, {"web", webAddr}} {
		t.Run(l.name, func(t *testing.T) {
			resource := "http://" + l.addr + "/api/v1"
			p.Register(oidctest.Client{ID: l.name + "_worker", Secret: "s", Audience: []string{resource}})
			p.Register(oidctest.Client{ID: l.name + "_late", Secret: "s", Audience: []string{resource}, Lifetime: -time.Minute})
			p.Register(oidctest.Client{ID: l.name + "_stranger", Secret: "s", Audience: []string{"https://mcp.example.com/mcp"}})
			meta := "http://" + l.addr + "/.well-known/oauth-protected-resource/api/v1"
			var code int
			var body []byte
			poll.Until(t, time.Minute, l.name+" listening", func() (bool, string) {
				resp, err := http.Get(meta)
				if err != nil {
					return false, err.Error()
				}
				defer resp.Body.Close()
				var b bytes.Buffer
				b.ReadFrom(resp.Body)
				code, body = resp.StatusCode, b.Bytes()
				return true, ""
			})
			var doc struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc.Resource != resource || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != p.URL {
				t.Fatalf("GET %s: %d %s", meta, code, body)
			}
			for name, c := range map[string]struct {
				token     string
				status    int
				challenge string
			}{
				"a token for this listener": {p.Token(t, l.name+"_worker", "workspace:task:t1"), http.StatusOK, ""},
				"a task it does not cover":  {p.Token(t, l.name+"_worker", "workspace:task:t2"), http.StatusForbidden, ""},
				"no token":                  {"", http.StatusUnauthorized, `Bearer resource_metadata="` + meta + `"`},
				"another audience":          {p.Token(t, l.name+"_stranger", "workspace:task:t1"), http.StatusUnauthorized, `error="invalid_token"`},
				"an expired token":          {p.Token(t, l.name+"_late", "workspace:task:t1"), http.StatusUnauthorized, `error="invalid_token"`},
			} {
				req, _ := http.NewRequest(http.MethodGet, "http://"+l.addr+"/api/v1/tasks/t1", nil)
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
			// Who the token's agent is: its subject.
			req, _ := http.NewRequest(http.MethodGet, "http://"+l.addr+"/api/v1/agent", nil)
			req.Header.Set("Authorization", "Bearer "+p.Token(t, l.name+"_worker", "workspace:task:t1"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var me struct {
				Agent string `json:"agent"`
			}
			json.NewDecoder(resp.Body).Decode(&me)
			resp.Body.Close()
			if me.Agent != l.name+"_worker" {
				t.Errorf("agent %q, want %s_worker", me.Agent, l.name)
			}
		})
	}
}

// TestListenerOAuthFlags: --oauth-issuer alone, and the OAuth flags of
// serve without --listen, are usage errors saying what goes with what.
func TestListenerOAuthFlags(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	failsWithHints(t, w, []failCase{
		{"serve issuer without listen", exitUsage, "go with --listen", []string{"serve", "--oauth-issuer", "https://auth.example.com"}},
		{"serve issuer alone", exitUsage, "--oauth-issuer goes with --oauth-resource", []string{"serve", "--listen", "127.0.0.1:0", "--oauth-issuer", "https://auth.example.com"}},
		{"web issuer alone", exitUsage, "--oauth-issuer goes with --oauth-resource", []string{"web", "--listen", "127.0.0.1:0", "--oauth-issuer", "https://auth.example.com"}},
		{"web resource without issuer", exitUsage, "--oauth-resource goes with an OAuth issuer", []string{"web", "--listen", "127.0.0.1:0", "--oauth-resource", "http://127.0.0.1:1/api/v1"}},
	})
}
