package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// Defaults of HTTPOptions.
const (
	// DefaultMaxSessions bounds the sessions served at once.
	DefaultMaxSessions = 256
	// DefaultIdleTimeout closes a session no request has used for this long.
	DefaultIdleTimeout = 30 * time.Minute
	// bodySlack is what a request may carry beyond the largest value: the
	// JSON-RPC envelope, the key, the description.
	bodySlack = 256 << 10
)

// Request parameters naming the task, thread and agent of a new session:
// a query parameter of the endpoint's URL, or a header.
const (
	ParamTask    = "task"
	ParamThread  = "thread"
	ParamAgent   = "agent"
	HeaderTask   = "Workspace-Task"
	HeaderThread = "Workspace-Thread"
	HeaderAgent  = "Workspace-Agent"
)

// HTTPOptions tune HTTP.
type HTTPOptions struct {
	// Version is reported to clients; "" means DefaultVersion.
	Version string
	// MaxSessions bounds the sessions served at once; a new session
	// beyond it is refused (503) while the others go on. 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// SessionsPerToken bounds the sessions one token holds at once, so
	// that no token takes the slots of the others: a new one beyond it is
	// refused (429). 0 means guard.DefaultSessions.
	SessionsPerToken int
	// IdleTimeout closes a session that no request used for this long.
	// 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds a request body (413 beyond it). 0 means the
	// workspace's value limit plus 256 KiB for the envelope.
	MaxBodyBytes int64
	// Log receives a line for every refusal, with the agent and the
	// reason, and for every session opened and closed. Nil: slog.Default().
	Log *slog.Logger
	// Observer, if set, is told of every tool call and refusal, for
	// metrics.
	Observer Observer
	// Audit, when set, gets a record of every tool call and every
	// refusal, with the token's id and the client's address.
	Audit *audit.Log
	// OAuth, if set, puts the server in OAuth resource-server mode:
	// besides the tokens the keeper holds (they begin with
	// tokens.Prefix), the access tokens it verifies are accepted, their
	// claims giving the agent and its rights; every 401 names the
	// Protected Resource Metadata (WWW-Authenticate resource_metadata),
	// which whoever mounts the handler serves (oauth.Verifier.Mount).
	// Nil: static tokens only, and no OAuth advertised.
	OAuth *oauth.Verifier
	// WatchEvery is how often the grants are read to end the sessions of
	// tokens revoked, expired or rotated past their overlap; 0 means
	// tokens.DefaultWatchEvery.
	WatchEvery time.Duration
}

// HTTP serves the workspace's MCP tools over the Streamable HTTP
// transport to remote agents, many sessions at once. Every request must
// carry a bearer token its tokens.Keeper holds (the agents file, or the
// tokens table on PostgreSQL); its grant names
// the agent — the agent is never taken from a request — and what that
// agent may do. A session serves one task and one thread, named when it
// starts (ParamTask and ParamThread in the URL's query, or HeaderTask and
// HeaderThread; a token for one task needs neither), or, naming neither,
// every task its token covers, each call naming its task; each call is
// then checked against the token's grant as it stands at that moment.
//
// Mount it where clients reach it (workspaced mcp --http serves it at
// /mcp; so does workspaced web). It is safe for concurrent use.
type HTTP struct {
	w     workspace.Store
	store tokens.Keeper
	opt   HTTPOptions
	log   *slog.Logger
	host  *host // one MCP server, shared by every session
	sdk   *mcp.StreamableHTTPHandler
	inner http.Handler  // sdk behind the bearer-token check
	watch *tokens.Watch // ends the sessions of ended tokens, writes last uses
	// folded are the tools whose calls are admitted on the token's
	// remembered grant (fold.go), remember the Keeper that remembers
	// it; nil when there are none.
	folded   map[string]bool
	remember tokens.Rememberer

	mu       sync.Mutex
	sessions int            // opened and not yet closed, reserved ones included
	perToken *guard.Counter // the same, by token id
}

// NewHTTP builds the handler over the workspace w, whose agents are the
// grants toks keeps (the agents file, tokens.NewStore or tokens.Tree; a
// table on PostgreSQL), looked up on every request. An agents file that
// cannot be trusted (group- or world-readable, not a regular file, broken)
// refuses every request until it is fixed.
func NewHTTP(w workspace.Store, toks tokens.Keeper, opt HTTPOptions) (*HTTP, error) {
	store := toks
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = DefaultMaxSessions
	}
	if opt.SessionsPerToken <= 0 {
		opt.SessionsPerToken = guard.DefaultSessions
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = int64(w.Settings().Limits.ValueMaxBytes) + bodySlack
	}
	if opt.Version == "" {
		opt.Version = DefaultVersion
	}
	if opt.Observer == nil {
		opt.Observer = nopObserver{}
	}
	h := &HTTP{w: w, store: store, opt: opt, log: opt.Log, perToken: guard.NewCounter(opt.SessionsPerToken)}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.watch = tokens.NewWatch(store, opt.WatchEvery, h.log)
	h.folded, h.remember = foldable(w, store)
	h.host = newHost(opt.Version, nil)
	h.host.obs = opt.Observer
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.host.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opt.IdleTimeout,
		MaxRequestBodyBytes: opt.MaxBodyBytes,
	})
	bearer := &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}
	if opt.OAuth != nil {
		bearer.ResourceMetadataURL = opt.OAuth.Config().MetadataURL()
	}
	h.inner = auth.RequireBearerToken(h.verify, bearer)(http.HandlerFunc(h.serve))
	return h, nil
}

// Sessions is the number of sessions open now.
func (h *HTTP) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions
}

// Close stops following the grants, writing the last uses of tokens not
// yet written. The sessions open stay open.
func (h *HTTP) Close() { h.watch.Close() }

// MaxBodyBytes is the bound on a request body.
func (h *HTTP) MaxBodyBytes() int64 { return h.opt.MaxBodyBytes }

// Who names the token r carries when the keeper holds it, or the OAuth
// issuer signed it for this server (its id), for what admits by it (a
// listener's /metrics).
func (h *HTTP) Who(r *http.Request) (string, bool) { return h.who(r, false) }

// Identify is Who for a listener's limits (guard.Options.Identify), which
// admit nothing by themselves: a token whose grant the Keeper remembers
// is named by it without a look-up (httpauth.TokenID), so that a call
// admitted on that grant (fold.go) is not looked up by its limit either.
func (h *HTTP) Identify(r *http.Request) (string, bool) { return h.who(r, true) }

func (h *HTTP) who(r *http.Request, remembered bool) (string, bool) {
	tok, ok := httpauth.Bearer(r)
	if !ok {
		return "", false
	}
	if h.opt.OAuth != nil && !strings.HasPrefix(tok, tokens.Prefix) {
		a, err := h.opt.OAuth.Verify(r.Context(), tok)
		if err != nil {
			return "", false
		}
		return a.Grant.ID(), true
	}
	if remembered {
		return httpauth.TokenID(r, h.store, tok)
	}
	g, err := httpauth.LookupFor(r, h.store, tok)
	if err != nil {
		return "", false
	}
	return g.ID(), true
}

// ServeHTTP refuses a request without a valid token (401, with the
// bearer challenge), with a body over the bound (413), or opening a
// session beyond the bound (503) or beyond its token's share (429), a
// task the token does not cover (403) or a task or thread that is not
// there (404); each refusal is logged with the agent and the reason.
func (h *HTTP) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	rw = guard.Challenging(rw, r, "")
	if r.ContentLength > h.opt.MaxBodyBytes {
		h.log.Warn("mcp http: request refused", "agent", "-", "remote", r.RemoteAddr,
			"reason", fmt.Sprintf("a body of %d bytes, more than %d", r.ContentLength, h.opt.MaxBodyBytes))
		h.opt.Observer.Refused(RefusalBodyTooLarge)
		http.Error(rw, fmt.Sprintf("request body exceeds %d bytes", h.opt.MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(rw, r.Body, h.opt.MaxBodyBytes)
	}
	if tok, ok := httpauth.Bearer(r); !ok {
		h.log.Warn("mcp http: request refused", "agent", "-", "remote", r.RemoteAddr, "reason", "no bearer token")
		h.opt.Observer.Refused(RefusalNoToken)
		h.refusedAudit(r, "", "", "no bearer token")
		if h.opt.OAuth == nil { // else the bearer check names the metadata
			rw.Header().Set("WWW-Authenticate", guard.Challenge(r, ""))
		}
	} else if h.opt.OAuth != nil && !strings.HasPrefix(tok, tokens.Prefix) {
		a, ok := h.verifyOAuth(rw, r, tok)
		if !ok {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), accessKey{}, a))
	} else if tool := h.guardedCall(r, tok); tool != "" {
		r = r.WithContext(context.WithValue(r.Context(), guardedKey{}, tool))
	}
	h.inner.ServeHTTP(rw, r)
}

// accessKey holds in a request's context the access token verifyOAuth
// accepted, for verify.
type accessKey struct{}

// verifyOAuth checks an access token: refused, the request is answered
// 401 (a token to get again) or 403 (a valid token that grants nothing
// here), with the challenge naming the metadata and why, and the refusal
// is logged without the token.
func (h *HTTP) verifyOAuth(rw http.ResponseWriter, r *http.Request, token string) (oauth.Access, bool) {
	a, err := h.opt.OAuth.Verify(r.Context(), token)
	if err == nil {
		return a, true
	}
	status, code, reason := http.StatusUnauthorized, oauth.ErrorInvalidToken, RefusalInvalidOAuth
	if errors.Is(err, oauth.ErrNoGrant) {
		status, code, reason = http.StatusForbidden, oauth.ErrorInsufficientScope, RefusalOAuthNoGrant
	}
	h.log.Warn("mcp http: request refused", "agent", "-", "remote", r.RemoteAddr, "reason", err.Error())
	h.opt.Observer.Refused(reason)
	h.refusedAudit(r, "", "", "access token: "+err.Error())
	rw.Header().Set("WWW-Authenticate", h.opt.OAuth.Challenge(code, workspace.Reason(err)))
	rpcError(rw, r, status, ErrorText(err))
	return oauth.Access{}, false
}

// verify is the bearer-token check: the token's grant as the Keeper
// holds it now, carried to every call as the TokenInfo's "grant" — or,
// for one call of a guarded tool, the grant the Keeper remembers
// (verifyRemembered). The user id the SDK binds a session to is the
// token's id, so that no other token can use the session.
func (h *HTTP) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	if a, ok := ctx.Value(accessKey{}).(oauth.Access); ok {
		return &auth.TokenInfo{UserID: a.Grant.ID(), Expiration: a.Expiry, Extra: map[string]any{"grant": a.Grant}}, nil
	}
	if ti, ok := h.verifyRemembered(ctx, token, r); ok {
		return ti, nil
	}
	g, err := httpauth.LookupFor(r, h.store, token)
	if err != nil {
		return nil, h.refused(r, err)
	}
	h.watch.Used(g, h.store.Now())
	return &auth.TokenInfo{UserID: g.ID(), Extra: map[string]any{"grant": g}}, nil
}

// grantOf is the grant the bearer-token check put in a call's extra.
func grantOf(extra *mcp.RequestExtra) (tokens.Grant, error) {
	if extra == nil || extra.TokenInfo == nil {
		return tokens.Grant{}, errors.New("no token")
	}
	g, ok := extra.TokenInfo.Extra["grant"].(tokens.Grant)
	if !ok {
		return tokens.Grant{}, errors.New("no grant")
	}
	return g, nil
}

// param is a session parameter: the query's, else the header's.
func param(r *http.Request, query, header string) string {
	if v := r.URL.Query().Get(query); v != "" {
		return v
	}
	return r.Header.Get(header)
}

// serve runs behind the token check: a POST without a session id opens a
// session, bound to the token's agent and to the task and thread it
// names; anything else goes to the SDK's handler as it is.
func (h *HTTP) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		h.sdk.ServeHTTP(rw, r)
		return
	}
	g, _ := grantOf(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())})
	refuse := func(status int, reason, msg, hint string) {
		h.opt.Observer.Refused(reason)
		h.refusedAudit(r, g.Agent, g.ID(), msg)
		h.log.Warn("mcp http: session refused", "agent", g.Agent, "remote", r.RemoteAddr, "reason", msg)
		rpcError(rw, r, status, msg+"\nhint: "+hint)
	}
	if a := param(r, ParamAgent, HeaderAgent); a != "" && a != g.Agent {
		refuse(http.StatusForbidden, RefusalOtherAgent, fmt.Sprintf("this token stands for agent %s; a request may not name another agent (%s)", g.Agent, a),
			"leave the agent out: the token names it")
		return
	}
	task, thread := param(r, ParamTask, HeaderTask), param(r, ParamThread, HeaderThread)
	// A session that names no task serves every task its token covers
	// (reach.go); a token for one task binds it to that task.
	if task == "" && thread == "" && len(g.Tasks) == 1 && g.Tasks[0] != tokens.AllTasks {
		task = g.Tasks[0]
	}
	if task == "" && thread != "" {
		t, err := h.w.ResolveThread(r.Context(), thread)
		if err != nil {
			h.refuseErr(rw, r, g, err)
			return
		}
		task = t
	}
	if task != "" && !g.Task(task) {
		refuse(http.StatusForbidden, RefusalTaskNotGranted, fmt.Sprintf("agent %s may not work on task %s: its token covers %s", g.Agent, task, g.TaskList()),
			"name a task the token covers, or ask for a token that covers this one")
		return
	}
	release := func() {}
	if opensSession(r) {
		var f *guard.Refusal
		if release, f = h.admit(g); f != nil {
			if f.Status == http.StatusServiceUnavailable {
				refuse(f.Status, RefusalTooManySessions, f.Msg, f.Hint)
				return
			}
			h.opt.Observer.Refused(RefusalTokenSessions)
			h.refusedAudit(r, g.Agent, g.ID(), f.Msg)
			h.log.Warn("mcp http: session refused", "agent", g.Agent, "token", g.ID(), "remote", r.RemoteAddr, "reason", f.Msg)
			WriteRefusal(rw, r, f)
			return
		}
	}
	s, err := newSession(r.Context(), h.w, Options{TaskID: task, ThreadID: thread, Agent: g.Agent, Grants: grantOf, Log: h.log,
		Audit: h.opt.Audit, TokenID: g.ID(), Remote: r.RemoteAddr})
	if err != nil {
		release()
		h.refuseErr(rw, r, g, err)
		return
	}
	// The session is connected with this request's context: binding s to
	// it binds every call of the session to s.
	h.sdk.ServeHTTP(rw, r.WithContext(withSession(r.Context(), s)))
	// The session lives on once initialised; it is counted until it
	// closes (the client ends it, it stays idle past the timeout, or its
	// token ends: closing it ends its streams too).
	if ss := h.opened(rw.Header().Get("Mcp-Session-Id")); ss != nil {
		h.log.Info("mcp http: session opened", "agent", g.Agent, "task", s.task, "thread", s.thread, "session", ss.ID(), "token", g.ID(), "remote", r.RemoteAddr)
		unhold := func() {}
		// An access token is not the keeper's: each request of the
		// session is verified again instead, until the token expires.
		if _, viaOAuth := r.Context().Value(accessKey{}).(oauth.Access); !viaOAuth {
			unhold = h.watch.Hold(g.ID(), func() {
				h.log.Info("mcp http: session ended: its token was revoked, expired or rotated", "agent", g.Agent, "session", ss.ID(), "token", g.ID())
				ss.Close()
			})
		}
		go func() {
			ss.Wait()
			unhold()
			release()
			h.log.Info("mcp http: session closed", "agent", g.Agent, "session", ss.ID())
		}()
		return
	}
	release()
}

// opened is the session of id the request just opened, or nil.
func (h *HTTP) opened(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range h.host.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// refuseErr refuses a session New or the thread look-up refused.
func (h *HTTP) refuseErr(rw http.ResponseWriter, r *http.Request, g tokens.Grant, err error) {
	status, reason := http.StatusBadRequest, RefusalInvalid
	if errors.Is(err, workspace.ErrNotFound) {
		status, reason = http.StatusNotFound, RefusalNotFound
	}
	h.opt.Observer.Refused(reason)
	h.refusedAudit(r, g.Agent, g.ID(), err.Error())
	h.log.Warn("mcp http: session refused", "agent", g.Agent, "remote", r.RemoteAddr, "reason", err.Error())
	rpcError(rw, r, status, ErrorText(err))
}

// opensSession reports whether r, a POST without a session id, is an
// initialize request, which opens a session; a stateless request
// (server/discover) holds no slot, even while it is being answered.
func opensSession(r *http.Request) bool {
	if r.Body == nil {
		return false
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		// The SDK reads the same error (a body over the bound: 413)
		// after what was read.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), failingReader{err}))
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(data, &m) != nil {
		return true
	}
	return m.Method == "initialize"
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// admit takes a slot for a session of g: one of its token's share, and
// one of the server's. It returns what gives them back, or why not.
func (h *HTTP) admit(g tokens.Grant) (func(), *guard.Refusal) {
	if !h.perToken.Acquire(g.ID()) {
		return nil, &guard.Refusal{Status: http.StatusTooManyRequests, Limit: guard.LimitSessions, RetryAfter: time.Minute,
			Msg:  fmt.Sprintf("too many sessions for this token: agent %s holds %d, the most one token may (token %s)", g.Agent, h.opt.SessionsPerToken, g.ID()),
			Hint: "end a session you no longer use (DELETE it), or try again once idle ones have expired"}
	}
	if !h.reserve() {
		h.perToken.Release(g.ID())
		return nil, &guard.Refusal{Status: http.StatusServiceUnavailable,
			Msg:  fmt.Sprintf("too many sessions: %d are open, the most this server serves", h.opt.MaxSessions),
			Hint: "close a session you no longer use, or try again once idle ones have expired"}
	}
	return func() {
		h.release()
		h.perToken.Release(g.ID())
	}, nil
}

func (h *HTTP) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions >= h.opt.MaxSessions {
		return false
	}
	h.sessions++
	return true
}

func (h *HTTP) release() {
	h.mu.Lock()
	h.sessions--
	h.mu.Unlock()
}
