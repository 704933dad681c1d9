// Package web is the live panel and the HTTP API of a workspace: pages a
// person watches tasks, shared data and events on as they happen, JSON
// routes other programs read, and the few actions a person takes (approve
// or send back a plan, review a checkpoint, answer an escalation, cancel a
// task, resolve friction), each done through the ordinary protocol as
// agent "human" — the panel never writes state itself.
//
// Every read and action goes through a workspace.Store, so the same panel
// serves any backend; the store must also be a workspace.Watcher, whose
// reports (Server.Run) tell the connected streams which task changed. An
// idle stream costs nothing but its connection. Assets are embedded; nothing is fetched from elsewhere.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// HumanAgent is the agent every action of the panel is recorded as.
const HumanAgent = "human"

// DefaultListen is where the panel listens unless told otherwise.
const DefaultListen = "127.0.0.1:7070"

// DefaultKeepAlive is how often an open stream gets a comment line, so
// that proxies and browsers keep an idle connection open.
const DefaultKeepAlive = 25 * time.Second

// Config is what a Server needs.
type Config struct {
	// Store is the workspace served. It must be a workspace.Watcher too:
	// the pages are live.
	Store workspace.Store
	// Token, when set, is required of every request but the login page and
	// the assets: as "Authorization: Bearer <token>", or by the session
	// the login page opens with it (user OperatorUser). Without it the
	// panel trusts every process of this machine (user LocalUser).
	Token string
	// Grants, when set, are the workspace's tokens: with Token set, one
	// holding the right panel logs in too, as its agent, and its sessions
	// end when it is revoked, expires or is rotated past its overlap.
	Grants tokens.Keeper
	// BehindTLSProxy marks the cookies Secure even though requests come
	// in plain HTTP: the panel sits behind a proxy that terminates TLS.
	BehindTLSProxy bool
	// SessionTTL is how long a login lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// LoginBurst and LoginEvery throttle failed logins per client address
	// (DefaultLoginBurst, DefaultLoginEvery when 0).
	LoginBurst int
	LoginEvery time.Duration
	// Logins, when set, is told of every login attempt.
	Logins LoginObserver
	// ClientOf is the client address failed logins are counted by (the
	// guard's, which believes a trusted proxy's X-Forwarded-For); nil:
	// the request's remote address.
	ClientOf func(*http.Request) string
	// Now is the login's clock (time.Now when nil).
	Now func() time.Time
	// Audit, when set, gets a record of every login, logout and action,
	// with the person's identity and address.
	Audit *audit.Log
	// ReadOnly turns every action off (403).
	ReadOnly bool
	// MCP, when set, is mounted at /mcp as is: outside the panel's cookie,
	// token and CSRF checks (it authenticates its own clients).
	MCP http.Handler
	// API, when set, is mounted at /api/v1/ as is, like MCP: the HTTP
	// API for programs, which admits its callers itself (package api).
	API http.Handler
	// KeepAlive is how often a stream gets a comment line
	// (DefaultKeepAlive when 0).
	KeepAlive time.Duration
	// Logger gets the watch's warnings (slog.Default when nil).
	Logger *slog.Logger
}

// Server serves the panel. Handler may be used before Run, but the
// streams only hear of changes while Run runs.
type Server struct {
	cfg     Config
	st      workspace.Store
	watcher workspace.Watcher
	log     *slog.Logger
	hub     *hub
	index   *index
	mux     *http.ServeMux

	// wakes counts the times a stream woke to do work; a test checks that
	// idle streams do none.
	wakes atomic.Int64
	ready chan struct{}

	servingProbe servingProbe
	logins       *logins
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: no workspace")
	}
	// Without reports of changes the pages would not be live. A poll
	// would read every task on every tick and still lag; every backend
	// can report (the tree watches its directories, a database notifies),
	// so a store that does not is refused here, at start.
	watcher, ok := workspace.As[workspace.Watcher](cfg.Store)
	if !ok {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve the panel",
			Msg:  fmt.Sprintf("the store (%T) does not report changes (workspace.Watcher), and the panel's pages are live", cfg.Store),
			Hint: "serve the panel over a store that implements workspace.Watcher (the file tree does)"}
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, st: cfg.Store, watcher: watcher, log: cfg.Logger, hub: newHub(), index: newIndex(), ready: make(chan struct{}),
		logins: newLogins(cfg)}
	s.routes()
	return s, nil
}

// Close ends every login session and stops following the tokens.
func (s *Server) Close() { s.logins.closeAll() }

// Ready is closed once Run watches the store and has indexed the tasks.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// CheckListen refuses to listen on a non-loopback address without a
// token: anyone who can reach the port could otherwise read every task
// and act as the human.
func CheckListen(addr string, hasToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if hasToken || isLoopbackHost(host) {
		return nil
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "listen on " + addr,
		Msg:  "not a loopback address, and no token: anyone who reaches the port could read every task and act as the human",
		Hint: "give a token file (a long random secret, e.g. 'openssl rand -hex 32 > token'), or listen on 127.0.0.1"}
}

func isLoopbackHost(host string) bool { return httpauth.LoopbackHost(host) }

// Handler is the whole panel: pages, assets, the API, and /mcp when
// configured.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.MCP != nil && (r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/")) {
			s.cfg.MCP.ServeHTTP(w, r)
			return
		}
		if s.cfg.API != nil && strings.HasPrefix(r.URL.Path, "/api/v1/") {
			s.cfg.API.ServeHTTP(w, r)
			return
		}
		s.guard(w, r)
	})
}

// The Content-Security-Policy of every response: scripts, styles and
// connections to this origin only, no inline script, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Cookie names.
const (
	csrfCookie = "wsd_csrf"
	csrfHeader = "X-CSRF-Token"
)

// guard applies the security headers, the host check, the token and the
// CSRF check, then routes.
func (s *Server) guard(w http.ResponseWriter, orig *http.Request) {
	r := orig
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// Without a token the panel trusts the loopback: a page of another
	// site that rebinds its name to 127.0.0.1 must not reach it.
	if s.cfg.Token == "" && !isLoopbackHost(hostOnly(r.Host)) {
		writeError(w, http.StatusForbidden, "host "+r.Host+" is not a loopback name", "open the panel as http://127.0.0.1:PORT/ or http://localhost:PORT/, or serve it with a token")
		return
	}
	public := strings.HasPrefix(r.URL.Path, "/assets/") || r.URL.Path == "/login"
	p, bearer := who{user: LocalUser, from: r.RemoteAddr}, false
	if s.cfg.Token != "" && !public {
		var sess *session
		var ok bool
		p, sess, ok, bearer = s.authorized(r)
		if !ok {
			s.cfg.Audit.Record(r.Context(), audit.Record{Door: audit.DoorPanel, Action: r.Method + " " + r.URL.Path, Outcome: audit.Refused,
				From: r.RemoteAddr, Reason: "no valid token or session"})
			if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
				writeError(w, http.StatusUnauthorized, "no valid token", "send 'Authorization: Bearer <token>', or log in at /login")
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if sess != nil {
			// The request ends with its session: a live stream stops at
			// logout, at the session's expiry or at its token's end.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(sess.ctx, cancel)
			defer stop()
			r = r.WithContext(ctx)
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), whoKey{}, p))
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/login" && !bearer {
		if !s.csrfOK(r) {
			s.cfg.Audit.Record(r.Context(), audit.Record{Door: audit.DoorPanel, Action: r.Method + " " + r.URL.Path, Outcome: audit.Refused,
				User: p.user, Token: p.token, From: r.RemoteAddr, Reason: "missing or wrong CSRF token"})
			writeError(w, http.StatusForbidden, "missing or wrong CSRF token", "send the token of the csrf cookie (GET /api/csrf) in the X-CSRF-Token header")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
	// The mux names the route on the request it served, a copy with the
	// person's context: the metrics read it on the original.
	orig.Pattern = r.Pattern
}

func hostOnly(hostport string) string { return httpauth.HostOnly(hostport) }

// authorized is who r stands for: a bearer token (the panel's, or one
// holding the right panel; a browser never sends the header on its own,
// so such a request needs no CSRF token), or the session of its cookie.
func (s *Server) authorized(r *http.Request) (p who, sess *session, ok, bearer bool) {
	if r.Header.Get("Authorization") != "" {
		t, found := httpauth.Bearer(r)
		if !found {
			return who{}, nil, false, false
		}
		p, ok = s.checkToken(t, r)
		return p, nil, ok, ok
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if sess, ok := s.logins.get(c.Value); ok {
			p = sess.who
			p.from = r.RemoteAddr
			return p, sess, true, false
		}
	}
	return who{}, nil, false, false
}

// Who names the person r stands for — by a bearer token (the panel's,
// or one holding the right panel) or a login's cookie — for the limits of
// a listener (guard.Options.Identify): the token's id, or "panel" and the
// user. A request that stands for nobody (a panel without a token, a
// loopback panel's trusted requests) counts against its address.
func (s *Server) Who(r *http.Request) (string, bool) {
	p, _, ok, _ := s.authorized(r)
	if !ok {
		return "", false
	}
	if p.token != "" {
		return p.token, true
	}
	return "panel " + p.user, true
}

func (s *Server) tokenIs(t string) bool { return httpauth.Equal(t, s.cfg.Token) }

// csrfOK is the double-submit check: the header must repeat the csrf
// cookie, which only pages of this origin can read (they get it in a meta
// tag). A cross-site form can send the cookie but cannot know it.
func (s *Server) csrfOK(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) < 32 {
		return false
	}
	h := r.Header.Get(csrfHeader)
	if h == "" && r.URL.Path == "/logout" {
		// The logout is a form of the page: it sends the token as a field.
		r.Body = http.MaxBytesReader(nil, r.Body, 4096)
		h = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(h), []byte(c.Value)) == 1
}

// csrfToken returns the request's csrf cookie, setting a fresh one when
// it has none.
func csrfToken(w http.ResponseWriter, r *http.Request, secure bool) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 && isHex(c.Value) {
		return c.Value
	}
	t := randomHex(32)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure})
	return t
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
