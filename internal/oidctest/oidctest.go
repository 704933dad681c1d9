// Package oidctest starts a real OpenID provider in-process for tests:
// zitadel's certified op package over the example storage of its
// module, on a loopback port of its own, with its own signing keys. Its
// clients use the client credentials grant and get JWT access tokens
// whose subject, audience, lifetime and extra claims the test chooses, so
// that tokens for another audience, expired ones or ones of another
// issuer are the provider's own, signed as any other.
package oidctest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a client of the provider, for the client credentials grant.
type Client struct {
	// ID and Secret authenticate it at the token endpoint.
	ID, Secret string
	// Subject is the sub of its tokens; "" means ID.
	Subject string
	// Audience is the aud of its tokens (the resource they are for).
	Audience []string
	// Lifetime is how long its tokens last; 0 means five minutes, a
	// negative one makes tokens already expired when issued.
	Lifetime time.Duration
	// Claims are added to its tokens' claims.
	Claims map[string]any
}

// Provider is the running provider; it stops with the test.
type Provider struct {
	// URL is the issuer: scheme, loopback host and port, no path.
	URL string

	st *store
}

// Start starts a provider on a loopback port, stopped at the test's end.
func Start(t testing.TB) *Provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	st := &store{Storage: storage.NewStorage(storage.NewUserStore(issuer)), clients: map[string]Client{}, natives: map[string]Native{}}
	p, err := op.NewProvider(&op.Config{
		CryptoKey:      sha256.Sum256([]byte(t.Name())),
		CodeMethodS256: true,
		AuthMethodPost: true,
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("start the OpenID provider: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	// The login page a native client's user is sent to: it logs User in
	// at once, as a person typing the password would, and sends the
	// browser back to the provider, which redirects it with the code.
	mux.HandleFunc("/login/username", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("authRequestID")
		if err := st.CheckUsernamePassword(User, Password, id); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, op.AuthCallbackURL(p)(r.Context(), id), http.StatusFound)
	})
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return &Provider{URL: issuer, st: st}
}

// User and Password log in at the provider's login page; the subject of
// their tokens is UserSubject.
const (
	User        = "test-user2"
	Password    = "verysecure"
	UserSubject = "id2"
)

// Native is a public client of the authorization code grant with PKCE,
// as a desktop MCP client is: no secret, a redirect URI, JWT access
// tokens for Audience.
type Native struct {
	ID          string
	RedirectURI string
	Audience    []string
}

// RegisterNative adds a native client.
func (p *Provider) RegisterNative(c Native) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.natives[c.ID] = c
}

// Register adds a client.
func (p *Provider) Register(c Client) {
	if c.Subject == "" {
		c.Subject = c.ID
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.clients[c.ID] = c
}

// Token is an access token of the client id with the scopes, asked of
// the provider's token endpoint as any client asks it.
func (p *Provider) Token(t testing.TB, id string, scopes ...string) string {
	t.Helper()
	p.st.mu.Lock()
	c, ok := p.st.clients[id]
	p.st.mu.Unlock()
	if !ok {
		t.Fatalf("no client %s", id)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, p.URL+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("token of %s: %v", id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token of %s: %s: %s", id, resp.Status, body)
	}
	return tok.AccessToken
}

// store is the example storage with this package's clients: JWT access
// tokens of the client credentials grant, their audience, lifetime and
// claims the client's.
type store struct {
	*storage.Storage

	mu      sync.Mutex
	clients map[string]Client
	natives map[string]Native
}

func (s *store) native(id string) (Native, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.natives[id]
	return c, ok
}

// GetClientByClientID is a native client of RegisterNative, or the
// example storage's.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if c, ok := s.native(id); ok {
		return codeClient{storage.NativeClient(c.ID, c.RedirectURI)}, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

// AuthRequestByCode gives a native client's request its audience.
func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	if c, ok := s.native(r.GetClientID()); ok {
		return audienced{r, c.Audience}, nil
	}
	return r, nil
}

// audienced is an authorization request whose tokens are for audience.
type audienced struct {
	op.AuthRequest
	audience []string
}

func (a audienced) GetAudience() []string { return a.audience }

// codeClient is a native client whose access tokens are JWTs, and that
// may ask for any scope.
type codeClient struct{ *storage.Client }

func (codeClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (codeClient) IsScopeAllowed(string) bool          { return true }

func (s *store) client(id string) (Client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	return c, ok
}

func (s *store) bySubject(sub string) (Client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if c.Subject == sub {
			return c, true
		}
	}
	return Client{}, false
}

// ClientCredentials authenticates a client of Register.
func (s *store) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	c, ok := s.client(id)
	if !ok || c.Secret != secret {
		return nil, errors.New("wrong client id or secret")
	}
	return jwtClient{storage.WebClient(id, secret)}, nil
}

// ClientCredentialsTokenRequest is the token the client gets: its
// subject and audience.
func (s *store) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.client(id)
	if !ok {
		return nil, fmt.Errorf("no client %s", id)
	}
	return &oidc.JWTTokenRequest{Subject: c.Subject, Audience: c.Audience, Scopes: scopes}, nil
}

// CreateAccessToken gives the token the client's lifetime.
func (s *store) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	c, ok := s.bySubject(req.GetSubject())
	if !ok {
		return s.Storage.CreateAccessToken(ctx, req)
	}
	life := c.Lifetime
	if life == 0 {
		life = 5 * time.Minute
	}
	return fmt.Sprintf("at-%d", time.Now().UnixNano()), time.Now().Add(life), nil
}

// GetPrivateClaimsFromRequest puts the scopes granted and the client's
// claims in the token.
func (s *store) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	claims := map[string]any{}
	if c, ok := s.bySubject(req.GetSubject()); ok {
		for k, v := range c.Claims {
			claims[k] = v
		}
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

// jwtClient is a client whose access tokens are JWTs, of the client
// credentials grant.
type jwtClient struct{ *storage.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
