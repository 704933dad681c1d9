package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// Defaults of the verifier's memory of accepted tokens.
const (
	// DefaultRemember is the longest a token accepted is accepted again
	// without checking its signature: no longer than its expiry either.
	DefaultRemember = 5 * time.Minute
	// rememberMax bounds the tokens remembered.
	rememberMax = 4096
)

// Verifier checks the access tokens of one resource against the keys its
// authorization server publishes. It is safe for concurrent use.
//
// A token accepted is remembered by its SHA-256 until it expires, for
// DefaultRemember at most: a client sends the same token with every
// request, and checking an RSA signature costs far more than a look-up.
// A refused token is checked again each time.
type Verifier struct {
	c   Config
	v   *oidc.IDTokenVerifier
	now func() time.Time

	mu   sync.Mutex
	seen map[[32]byte]remembered
}

type remembered struct {
	a     Access
	until time.Time
}

// Access is what a verified token stands for.
type Access struct {
	// Grant is the agent and its rights, from the token's claims.
	Grant tokens.Grant
	// Subject and Issuer name who the token was issued to, and by whom.
	Subject, Issuer string
	// Expiry is when the token stops being accepted.
	Expiry time.Time
}

// New is the verifier of c (with its defaults, checked): the issuer's
// keys are found by its discovery document (OpenID Connect discovery,
// else RFC 8414 authorization server metadata) unless c.JWKSURI names
// them, and fetched again when a token names a key not seen yet. client,
// if not nil, makes every request to the authorization server; ctx
// bounds the discovery alone.
func New(ctx context.Context, c Config, client *http.Client) (*Verifier, error) {
	c = c.WithDefaults()
	if err := c.Check(); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	ctx = oidc.ClientContext(ctx, client)
	jwks := c.JWKSURI
	if jwks == "" {
		p, err := oidc.NewProvider(ctx, c.Issuer)
		if err == nil {
			var doc struct {
				JWKSURI string `json:"jwks_uri"`
			}
			err = p.Claims(&doc)
			jwks = doc.JWKSURI
		}
		if err != nil || jwks == "" {
			oidcErr := err
			jwks, err = authServerKeys(ctx, client, c.Issuer)
			if err != nil {
				if oidcErr == nil {
					oidcErr = errors.New("its document names no jwks_uri")
				}
				err = fmt.Errorf("OpenID Connect discovery: %v; RFC 8414 metadata: %w", strings.TrimPrefix(oidcErr.Error(), "oidc: "), err)
				return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "oauth: discover the keys of " + c.Issuer, Err: err,
					Hint: "check oauth.issuer (the issuer's exact URL, as its tokens' iss claim says), or name its keys in oauth.jwks_uri"}
			}
		}
	}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), jwks)
	v := &Verifier{c: c, now: time.Now, seen: map[[32]byte]remembered{}}
	v.v = oidc.NewVerifier(c.Issuer, keys, &oidc.Config{
		SkipClientIDCheck:    true, // the audience is checked against the resource below
		SupportedSigningAlgs: []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA},
		Now:                  func() time.Time { return v.now() },
	})
	return v, nil
}

// Config is the verifier's configuration, with its defaults.
func (v *Verifier) Config() Config { return v.c }

// Verify checks raw, an access token: its signature by one of the
// issuer's keys, its issuer, its expiry (a token without one is refused),
// and its audience, which must name this resource (or one of
// Audiences). A token that fails is ErrInvalidToken; one whose claims
// grant nothing here is ErrNoGrant. The token itself is in no error.
func (v *Verifier) Verify(ctx context.Context, raw string) (Access, error) {
	if strings.Count(raw, ".") != 2 {
		return Access{}, invalid("not a JWT")
	}
	sum := sha256.Sum256([]byte(raw))
	if a, ok := v.recall(sum); ok {
		return a, nil
	}
	a, err := v.verify(ctx, raw)
	if err == nil {
		v.remember(sum, a)
	}
	return a, err
}

// recall is the access of a token accepted before, while remembered.
func (v *Verifier) recall(sum [32]byte) (Access, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.seen[sum]
	if !ok || !v.now().Before(r.until) {
		return Access{}, false
	}
	return r.a, true
}

// remember keeps an accepted token until its expiry, DefaultRemember at
// most; when rememberMax are kept, the expired ones are dropped, and all
// of them if none was.
func (v *Verifier) remember(sum [32]byte, a Access) {
	now := v.now()
	until := now.Add(DefaultRemember)
	if a.Expiry.Before(until) {
		until = a.Expiry
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.seen) >= rememberMax {
		for k, r := range v.seen {
			if !now.Before(r.until) {
				delete(v.seen, k)
			}
		}
		if len(v.seen) >= rememberMax {
			clear(v.seen)
		}
	}
	v.seen[sum] = remembered{a: a, until: until}
}

// verify checks a token not remembered.
func (v *Verifier) verify(ctx context.Context, raw string) (Access, error) {
	t, err := v.v.Verify(ctx, raw)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return Access{}, invalid("expired at " + exp.Expiry.UTC().Format(time.RFC3339))
		}
		return Access{}, invalid(strings.TrimPrefix(err.Error(), "oidc: "))
	}
	if !v.audience(t.Audience) {
		return Access{}, invalid(fmt.Sprintf("issued for %s, not for this server (%s)", audiences(t.Audience), v.c.Resource))
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return Access{}, invalid("its claims do not decode: " + err.Error())
	}
	g, err := v.c.Grant(claims)
	if err != nil {
		return Access{}, err
	}
	return Access{Grant: g, Subject: t.Subject, Issuer: t.Issuer, Expiry: t.Expiry}, nil
}

// audience reports whether aud names this resource (a trailing slash
// aside, as oauthex.MatchesResource allows) or an accepted audience.
func (v *Verifier) audience(aud []string) bool {
	if oauthex.MatchesResource(aud, v.c.Resource) {
		return true
	}
	for _, a := range v.c.Audiences {
		if slices.Contains(aud, a) {
			return true
		}
	}
	return false
}

func audiences(aud []string) string {
	if len(aud) == 0 {
		return "no audience"
	}
	q := make([]string, len(aud))
	for i, a := range aud {
		q[i] = quote(a)
	}
	return strings.Join(q, ", ")
}

func invalid(why string) error {
	return &workspace.Error{Kind: ErrInvalidToken, Op: "oauth", Msg: "the access token is refused: " + why,
		Hint: "get a token from the authorization server for this server's resource"}
}

// Metadata is the resource's Protected Resource Metadata (RFC 9728): its
// canonical URI, its authorization server, the scopes the mapping reads,
// and that tokens come in the Authorization header only.
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.c.Resource,
		AuthorizationServers:   []string{v.c.Issuer},
		ScopesSupported:        v.c.ScopesSupported(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "workspaced",
	}
}

// Mount serves the metadata on mux at each of the configuration's
// MetadataPaths, to anyone: it is public by design (RFC 9728 §3).
func (v *Verifier) Mount(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(v.Metadata())
	for _, p := range v.c.MetadataPaths() {
		mux.Handle(p, h)
	}
}

// authServerKeys finds the keys of an authorization server without
// OpenID Connect discovery: its RFC 8414 metadata, at the well-known
// path inserted before the issuer's path, whose issuer must be the one
// asked for.
func authServerKeys(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", err
	}
	where := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + strings.TrimRight(u.EscapedPath(), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answers %s", where, resp.Status)
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta); err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if meta.Issuer != issuer {
		return "", fmt.Errorf("%s names the issuer %q, not %q", where, meta.Issuer, issuer)
	}
	if meta.JWKSURI == "" {
		return "", fmt.Errorf("%s names no jwks_uri", where)
	}
	return meta.JWKSURI, nil
}
