package httpauth

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestGateOAuth: with a verifier, a bearer token that is not the agents
// file's is an access token: the provider's token for the resource is
// its subject's grant; a refused one is ErrInvalidToken or ErrNoGrant,
// and each refusal's challenge names the metadata; without a verifier
// the challenge is the realm alone.
func TestGateOAuth(t *testing.T) {
	t.Parallel()
	const resource = "https://mcp.example.com/mcp"
	p := oidctest.Start(t)
	p.Register(oidctest.Client{ID: "worker", Secret: "s", Audience: []string{resource}})
	p.Register(oidctest.Client{ID: "stranger", Secret: "s", Audience: []string{"https://other.example.com"}})
	v, err := oauth.New(context.Background(), oauth.Config{OAuthSettings: workspace.OAuthSettings{Issuer: p.URL, Resource: resource}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{OAuth: v}
	caller := func(token string) (Caller, error) {
		r := httptest.NewRequest("GET", "/api/v1/tasks", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return g.Caller(r)
	}
	c, err := caller(p.Token(t, "worker", "workspace:task:t1", "workspace:plan"))
	if err != nil || c.Grant.Agent != "worker" || !c.Token || !c.Grant.Task("t1") || !c.Grant.Can("plan") || c.Grant.Can("claim") {
		t.Fatalf("the provider's token: %+v, %v", c, err)
	}
	meta := `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	for name, tc := range map[string]struct {
		token string
		is    error
		says  string
	}{
		"another audience": {p.Token(t, "stranger", "workspace:task:t1"), oauth.ErrInvalidToken, `error="invalid_token"`},
		"no task":          {p.Token(t, "worker", "workspace:plan"), oauth.ErrNoGrant, `error="insufficient_scope"`},
		"unknown wsd_":     {"wsd_nope", ErrUnknownToken, `error="invalid_token"`},
		"no token":         {"", ErrNoToken, meta},
	} {
		_, err := caller(tc.token)
		ch := g.Challenge(err)
		if !errors.Is(err, tc.is) || !strings.Contains(ch, meta) || !strings.Contains(ch, tc.says) {
			t.Errorf("%s: %v, challenge %q", name, err, ch)
		}
	}
	if ch := (&Gate{}).Challenge(ErrNoToken); ch != `Bearer realm="workspaced"` {
		t.Errorf("without OAuth: %q", ch)
	}
}
