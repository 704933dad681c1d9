package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

const resource = "https://mcp.example.com/mcp"

func config(issuer string) oauth.Config {
	return oauth.Config{OAuthSettings: workspace.OAuthSettings{Issuer: issuer, Resource: resource}}
}

func verifier(t *testing.T, c oauth.Config) *oauth.Verifier {
	t.Helper()
	v, err := oauth.New(context.Background(), c, nil)
	if err != nil {
		t.Fatalf("oauth.New: %v", err)
	}
	return v
}

// TestVerifyAgainstProvider verifies the tokens of a real OpenID provider
// started here: one for this resource is accepted and mapped to its
// agent and rights; one for another audience, an expired one, one of
// another issuer and a token that is no JWT are refused, saying why.
func TestVerifyAgainstProvider(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	p.Register(oidctest.Client{ID: "worker-1", Secret: "s1", Audience: []string{resource}, Claims: map[string]any{"workspace_tasks": []string{"t2"}}})
	p.Register(oidctest.Client{ID: "elsewhere", Secret: "s2", Audience: []string{"https://other.example.com/mcp"}})
	p.Register(oidctest.Client{ID: "late", Secret: "s3", Audience: []string{resource}, Lifetime: -time.Minute})
	p.Register(oidctest.Client{ID: "slash", Secret: "s4", Audience: []string{resource + "/"}})
	other := oidctest.Start(t)
	other.Register(oidctest.Client{ID: "worker-1", Secret: "s1", Audience: []string{resource}})
	v := verifier(t, config(p.URL))
	ctx := context.Background()

	a, err := v.Verify(ctx, p.Token(t, "worker-1", "workspace:task:t1", "workspace:claim", "workspace:done", "workspace:memory:read", "openid"))
	if err != nil {
		t.Fatalf("a token for this resource: %v", err)
	}
	want := tokens.Grant{Agent: "worker-1", Tasks: []string{"t2", "t1"}, May: []string{tokens.RightClaim, tokens.RightDone}, GlobalMemory: tokens.GlobalRead}
	g := a.Grant
	if g.Agent != want.Agent || !reflect.DeepEqual(g.Tasks, want.Tasks) || !reflect.DeepEqual(g.May, want.May) || g.GlobalMemory != want.GlobalMemory {
		t.Errorf("grant = %+v, want %+v", g, want)
	}
	if a.Subject != "worker-1" || a.Issuer != p.URL || time.Until(a.Expiry) <= 0 || !strings.HasPrefix(g.ID(), "tk_") || g.Note != "OAuth: "+p.URL {
		t.Errorf("access = %+v", a)
	}
	again, err := v.Verify(ctx, p.Token(t, "worker-1", "workspace:task:t1"))
	if err != nil || again.Grant.ID() != g.ID() {
		t.Errorf("a second token of the same subject: %v, id %s, want %s", err, again.Grant.ID(), g.ID())
	}
	if _, err := v.Verify(ctx, p.Token(t, "slash", "workspace:task:t1")); err != nil {
		t.Errorf("an audience with a trailing slash: %v", err)
	}

	for name, c := range map[string]struct {
		token string
		says  string
	}{
		"another audience": {p.Token(t, "elsewhere", "workspace:task:t1"), `issued for "https://other.example.com/mcp", not for this server`},
		"expired":          {p.Token(t, "late", "workspace:task:t1"), "expired at"},
		"another issuer":   {other.Token(t, "worker-1", "workspace:task:t1"), "refused"},
		"not a JWT":        {"wsd_abc", "not a JWT"},
		"garbage":          {"a.b.c", "refused"},
	} {
		_, err := v.Verify(ctx, c.token)
		if !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrInvalidToken saying %q", name, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), c.token) && len(c.token) > 10 {
			t.Errorf("%s: the error shows the token", name)
		}
	}

	// Keys of the other provider, issuer of the first: the signature
	// holds, the issuer does not.
	c := config(p.URL)
	c.JWKSURI = other.URL + "/keys"
	_, err = verifier(t, c).Verify(ctx, other.Token(t, "worker-1", "workspace:task:t1"))
	if !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), "different provider") {
		t.Errorf("another issuer, its keys trusted: %v", err)
	}

	// A valid token granting no task is refused as granting nothing.
	_, err = v.Verify(ctx, p.Token(t, "slash", "workspace:claim"))
	if !errors.Is(err, oauth.ErrNoGrant) || !strings.Contains(err.Error(), "grants no task") {
		t.Errorf("no task: %v", err)
	}
}

// TestNewRefusesAnIssuerWithoutKeys: an issuer whose discovery fails is
// said at start, with a hint.
func TestNewRefusesAnIssuerWithoutKeys(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := oauth.New(context.Background(), config(srv.URL), nil)
	var we *workspace.Error
	if !errors.As(err, &we) || !strings.Contains(we.Hint, "oauth.issuer") {
		t.Fatalf("err = %v, want a hint naming oauth.issuer", err)
	}
}

// TestMetadata: the Protected Resource Metadata names the resource, its
// authorization server and the scopes the mapping reads, at the
// well-known path followed by the resource's path and at the root's.
func TestMetadata(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	v := verifier(t, config(p.URL))
	mux := http.NewServeMux()
	v.Mount(mux)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if doc["resource"] != resource || !reflect.DeepEqual(doc["authorization_servers"], []any{p.URL}) ||
			!reflect.DeepEqual(doc["bearer_methods_supported"], []any{"header"}) {
			t.Errorf("GET %s = %v", path, doc)
		}
		scopes, _ := doc["scopes_supported"].([]any)
		if len(scopes) != 7 || scopes[0] != "workspace:claim" || scopes[6] != "workspace:task:*" {
			t.Errorf("scopes_supported = %v", scopes)
		}
	}
	if got := v.Config().MetadataURL(); got != "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataURL = %s", got)
	}
}

// FuzzVerify: whatever a client sends as its token, Verify accepts it
// only as the provider signed it, and refuses anything else as an
// invalid token (or one granting nothing), never showing it back.
func FuzzVerify(f *testing.F) {
	p := oidctest.Start(f)
	p.Register(oidctest.Client{ID: "worker-1", Secret: "s1", Audience: []string{resource}})
	good := p.Token(f, "worker-1", "workspace:task:t1")
	f.Add(good)
	head, rest, _ := strings.Cut(good, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	f.Add(head + "." + payload + ".")
	f.Add(head + "." + payload + "." + strings.ToUpper(sig))
	f.Add("eyJhbGciOiJub25lIn0." + payload + ".")
	f.Add(strings.Repeat(".", 2))
	f.Add("a.b.c")
	v, err := oauth.New(context.Background(), config(p.URL), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		a, err := v.Verify(context.Background(), token)
		if err == nil {
			if token != good || a.Grant.Agent != "worker-1" {
				t.Fatalf("accepted %q as %+v", token, a)
			}
			return
		}
		if !errors.Is(err, oauth.ErrInvalidToken) && !errors.Is(err, oauth.ErrNoGrant) {
			t.Fatalf("%q: %v", token, err)
		}
		if len(token) > 16 && strings.Contains(err.Error(), token) {
			t.Fatalf("the error shows the token: %v", err)
		}
	})
}

// BenchmarkVerify is the cost of checking one access token (RS256, the
// provider's keys already fetched) and mapping its claims: what OAuth
// mode adds to a request.
func BenchmarkVerify(b *testing.B) {
	p := oidctest.Start(b)
	p.Register(oidctest.Client{ID: "worker-1", Secret: "s1", Audience: []string{resource}})
	tok := p.Token(b, "worker-1", "workspace:task:t1", "workspace:claim")
	v, err := oauth.New(context.Background(), config(p.URL), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNewSaysWhyDiscoveryFailed: an issuer written otherwise than the
// provider names itself (a trailing slash) is refused at start, saying
// so.
func TestNewSaysWhyDiscoveryFailed(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	_, err := oauth.New(context.Background(), config(p.URL+"/"), nil)
	if err == nil || !strings.Contains(err.Error(), "did not match the issuer URL returned by provider") {
		t.Fatalf("err = %v, want the OpenID Connect discovery's reason", err)
	}
}
