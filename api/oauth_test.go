package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestOAuthAccessTokens: on a listener in OAuth resource-server mode the
// API admits the provider's access tokens as the agent their claims name
// with the rights their scopes give, as /mcp does; a bad token is a 401
// and a token granting nothing a 403, each with the challenge naming the
// metadata.
func TestOAuthAccessTokens(t *testing.T) {
	p := oidctest.Start(t)
	st := newTreeStore(t)
	for _, id := range []string{"t1", "t2"} {
		if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: id, Description: "oauth"}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	v, err := oauth.New(context.Background(), oauth.Config{OAuthSettings: workspace.OAuthSettings{Issuer: p.URL, Resource: resource}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = New(Config{Store: st, Gate: &httpauth.Gate{OAuth: v}, Log: quiet})
	srv.Start()
	t.Cleanup(srv.Close)
	p.Register(oidctest.Client{ID: "worker", Secret: "s", Audience: []string{resource}})

	c := client{t: t, base: srv.URL, token: p.Token(t, "worker", "workspace:task:t1")}
	var who callerView
	c.want(c.do("GET", "/api/v1/agent", nil), 200, "who am I").json(t, &who)
	if who.Agent != "worker" || len(who.Tasks) != 1 || who.Tasks[0] != "t1" {
		t.Fatalf("caller %+v", who)
	}
	c.want(c.do("GET", "/api/v1/tasks/t2", nil), 403, "a task its scopes do not cover").problem(t)
	c.want(c.do("POST", "/api/v1/tasks/t1/claims", map[string]any{"subtask": "s1"}), 403, "a claim without its scope").problem(t)

	for _, tc := range []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"no token", "", 401, `Bearer resource_metadata="`},
		{"a bad token", "not.a.jwt", 401, `error="invalid_token"`},
		{"a token granting nothing", p.Token(t, "worker"), 403, `error="insufficient_scope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client{t: t, base: srv.URL, token: tc.token}
			a := c.want(c.do("GET", "/api/v1/tasks", nil), tc.status, tc.name)
			a.problem(t)
			if got := a.header.Get("WWW-Authenticate"); !strings.Contains(got, tc.challenge) || !strings.Contains(got, "resource_metadata=") {
				t.Errorf("WWW-Authenticate %q, want it to hold %q", got, tc.challenge)
			}
		})
	}
}
