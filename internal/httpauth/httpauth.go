// Package httpauth is how workspaced's listeners (serve --listen, web, mcp
// --http) tell who a request acts as, in one place: a bearer token of
// 'workspaced token add' names its agent and what that agent may do (the
// token's grant, looked up on every request so a revoked token is refused
// at once, and once a request behind Once; or, for an operation whose
// store checks the grant's row in its own statement, remembered from the
// look-up before: CallerGuarded); on a listener that trusts its loopback (a loopback address, no
// token file, no TLS) a request without a token acts as the agent the
// Workspace-Agent header names, with every right, as the command line
// does. The MCP server's token check and the HTTP API both ask a Gate.
package httpauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// HeaderAgent names, on a trusted listener, the agent a request without a
// token acts as.
const HeaderAgent = "Workspace-Agent"

// DefaultAgent is the agent of a request that names none on a trusted
// listener: the command line's default.
const DefaultAgent = "cli"

// Why a request is refused.
var (
	// ErrNoToken: no bearer token where one is needed.
	ErrNoToken = errors.New("no bearer token")
	// ErrUnknownToken: a token no grant holds (never issued, or revoked).
	ErrUnknownToken = errors.New("unknown or revoked token")
	// ErrUntrusted: the grants cannot be read or trusted (an agents file
	// others may read, a broken file): every token is refused until it
	// is fixed.
	ErrUntrusted = errors.New("the agents' tokens cannot be trusted")
	// ErrOtherAgent: a header naming another agent than the token's.
	ErrOtherAgent = errors.New("another agent named")
	// ErrHost: a Host that is not a loopback name on a listener that
	// trusts its loopback (a page rebinding its name to 127.0.0.1).
	ErrHost = errors.New("host not loopback")
	// ErrAccess: an OAuth access token refused (wrapping why:
	// oauth.ErrNoGrant for a valid one that grants nothing here).
	ErrAccess = errors.New("access token refused")
)

// Caller is who a request acts as.
type Caller struct {
	// Grant is the token's grant; on a trusted listener without a token,
	// a grant of the named agent over every task with every right.
	Grant tokens.Grant
	// Token says the grant is a token's (false: trusted by the loopback).
	Token bool
	// Access says the token is an OAuth access token, its grant its
	// claims' (not one the Keeper holds).
	Access bool
	// Guard, when set, says the grant was not looked up for this
	// request but remembered from a look-up before (CallerGuarded): the
	// operation must run with it in its context
	// (workspace.WithGrantGuard), on a store that checks it.
	Guard workspace.GrantGuard
}

// Guarded says the caller was admitted on a remembered grant, which the
// operation's store must check (Guard).
func (c Caller) Guarded() bool { return c.Guard.SHA256 != "" }

// Gate admits a listener's requests. The zero Gate admits nobody.
type Gate struct {
	// Keeper holds the agents' tokens (nil: this store keeps none).
	Keeper tokens.Keeper
	// TrustLoopback lets a request without a token act as the agent it
	// names: for a listener on a loopback address with no token file and
	// no TLS, where only this machine's users reach it. Its requests must
	// then name a loopback Host.
	TrustLoopback bool
	// Watch, when set, is told of every token accepted (its last use is
	// written) and ends what a server holds open for a token that ends
	// (Hold).
	Watch *tokens.Watch
	// OAuth, when set, verifies a bearer token that is not the Keeper's
	// (it lacks tokens.Prefix) as an OAuth access token, its claims the
	// grant (mcp --http in resource-server mode).
	OAuth *oauth.Verifier
}

// Bearer is the request's bearer token, and whether it has one.
func Bearer(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}

// Equal compares a presented secret with the expected one in constant
// time.
func Equal(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Lookup is the grant of token as k keeps it now: ErrUnknownToken when no
// grant has it, tokens.ErrExpired (saying when) when it ended,
// ErrUntrusted (wrapping why) when the grants cannot be trusted.
func Lookup(k tokens.Keeper, token string) (tokens.Grant, error) {
	if k == nil {
		return tokens.Grant{}, ErrUnknownToken
	}
	g, err := k.Lookup(token)
	switch {
	case errors.Is(err, tokens.ErrUnknown):
		return tokens.Grant{}, ErrUnknownToken
	case errors.Is(err, tokens.ErrExpired):
		return tokens.Grant{}, err
	case err != nil:
		return tokens.Grant{}, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return g, nil
}

// onceKey is the context key of a request's look-up (Once).
type onceKey struct{}

// lookedUp is the look-up of a request's token, made by the first who
// asks for it.
type lookedUp struct {
	mu    sync.Mutex
	done  bool
	k     tokens.Keeper
	token string
	g     tokens.Grant
	err   error
}

// Once serves next with one look-up of each request's token for all who
// ask for it through LookupFor: a listener's guard (counting the request
// against its token's rate) and its gate (admitting it) read the grants
// once a request instead of once each — on PostgreSQL a round trip less
// — and get the same answer. The look-up is made when the request is
// served, as before, so a token revoked is refused from the next request
// on.
func Once(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), onceKey{}, &lookedUp{})))
	})
}

// LookupFor is Lookup of the token r carries, made once for r when r is
// served through Once (and asked of the same Keeper), else every time.
func LookupFor(r *http.Request, k tokens.Keeper, token string) (tokens.Grant, error) {
	m, _ := r.Context().Value(onceKey{}).(*lookedUp)
	if m == nil {
		return Lookup(k, token)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done && m.token == token && sameKeeper(m.k, k) {
		return m.g, m.err
	}
	m.g, m.err = Lookup(k, token)
	m.done, m.k, m.token = true, k, token
	return m.g, m.err
}

// sameKeeper reports whether a and b are one Keeper (false when it cannot
// tell: a type that cannot be compared).
func sameKeeper(a, b tokens.Keeper) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Caller is who r acts as: its token's grant, or on a trusted listener
// without a token the agent HeaderAgent names (DefaultAgent when none).
// A header naming another agent than the token's is ErrOtherAgent.
func (g *Gate) Caller(r *http.Request) (Caller, error) { return g.caller(r, false) }

// CallerGuarded is Caller for an operation whose store checks a grant
// guard in the operation's own statement (workspace.GrantGuarding): a
// token whose grant the Keeper remembers (tokens.Rememberer) is admitted
// on that grant, still live, with no look-up, and the Caller's Guard
// names the row it was read from. Should the store find the row changed
// (workspace.ErrGrantChanged), or the grant refuse the operation, the
// door calls Forget and asks Caller, which looks the token up. Every
// other request is Caller's.
func (g *Gate) CallerGuarded(r *http.Request) (Caller, error) { return g.caller(r, true) }

// Forget forgets the grant remembered for r's token (CallerGuarded).
func (g *Gate) Forget(r *http.Request) {
	if m, ok := g.Keeper.(tokens.Rememberer); ok {
		if tok, ok := Bearer(r); ok {
			m.Forget(tok)
		}
	}
}

// TokenID is the id of the token r carries, and whether k holds it: from
// the grant k remembers for it when there is one (no look-up), else from
// r's look-up (LookupFor). For what admits nothing by itself: a
// listener's rate limit by token, before the gate decides.
func TokenID(r *http.Request, k tokens.Keeper, token string) (string, bool) {
	if m, ok := k.(tokens.Rememberer); ok {
		if gr, _, ok := m.Remembered(token); ok {
			return gr.ID(), true
		}
	}
	gr, err := LookupFor(r, k, token)
	return gr.ID(), err == nil
}

func (g *Gate) caller(r *http.Request, guarded bool) (Caller, error) {
	named := strings.TrimSpace(r.Header.Get(HeaderAgent))
	if tok, ok := Bearer(r); ok {
		if g.OAuth != nil && !strings.HasPrefix(tok, tokens.Prefix) {
			a, err := g.OAuth.Verify(r.Context(), tok)
			if err != nil {
				return Caller{}, fmt.Errorf("%w: %w", ErrAccess, err)
			}
			c := Caller{Grant: a.Grant, Token: true, Access: true}
			if named != "" && named != a.Grant.Agent {
				return c, fmt.Errorf("%w: the token stands for agent %s, the request names %s", ErrOtherAgent, a.Grant.Agent, named)
			}
			return c, nil
		}
		c := Caller{Token: true}
		remembered := false
		if m, ok := g.Keeper.(tokens.Rememberer); ok && guarded {
			c.Grant, c.Guard, remembered = m.Remembered(tok)
		}
		if !remembered {
			gr, err := LookupFor(r, g.Keeper, tok)
			if err != nil {
				return Caller{}, err
			}
			c.Grant = gr
		}
		if named != "" && named != c.Grant.Agent {
			return c, fmt.Errorf("%w: the token stands for agent %s, the request names %s", ErrOtherAgent, c.Grant.Agent, named)
		}
		if g.Watch != nil {
			g.Watch.Used(c.Grant, g.Keeper.Now())
		}
		return c, nil
	}
	if !g.TrustLoopback {
		return Caller{}, ErrNoToken
	}
	if !LoopbackHost(HostOnly(r.Host)) {
		return Caller{}, fmt.Errorf("%w: %s", ErrHost, r.Host)
	}
	if named == "" {
		named = DefaultAgent
	}
	if err := workspace.ValidateID("agent", named); err != nil {
		return Caller{}, err
	}
	return Caller{Grant: tokens.Grant{Agent: named, Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite, May: tokens.Rights()}}, nil
}

// Hold calls end when the token of c ends (revoked, expired, rotated past
// its overlap), for what a server keeps open on it (a stream); release
// forgets it. A caller without a token, or a gate without a Watch, holds
// nothing.
func (g *Gate) Hold(c Caller, end func()) (release func()) {
	if !c.Token || c.Access || g.Watch == nil {
		return func() {}
	}
	return g.Watch.Hold(c.Grant.ID(), end)
}

// LoopbackHost reports whether host (without a port) names this machine
// alone: localhost or a loopback address.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostOnly is the host of a host:port (or of a bare host).
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}
