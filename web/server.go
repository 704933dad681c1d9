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

	"github.com/workspaced/workspaced/internal/httpauth"
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
	// the assets: as "Authorization: Bearer <token>", or as the cookie the
	// login page sets.
	Token string
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
	s := &Server{cfg: cfg, st: cfg.Store, watcher: watcher, log: cfg.Logger, hub: newHub(), index: newIndex(), ready: make(chan struct{})}
	s.routes()
	return s, nil
}

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
	tokenCookie = "wsd_token"
	csrfCookie  = "wsd_csrf"
	csrfHeader  = "X-CSRF-Token"
)

// guard applies the security headers, the host check, the token and the
// CSRF check, then routes.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) {
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
	bearer := false
	if s.cfg.Token != "" && !public {
		ok := false
		ok, bearer = s.authorized(r)
		if !ok {
			if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
				writeError(w, http.StatusUnauthorized, "no valid token", "send 'Authorization: Bearer <token>', or log in at /login")
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/login" && !bearer {
		if !s.csrfOK(r) {
			writeError(w, http.StatusForbidden, "missing or wrong CSRF token", "send the token of the csrf cookie (GET /api/csrf) in the X-CSRF-Token header")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func hostOnly(hostport string) string { return httpauth.HostOnly(hostport) }

// authorized reports whether r carries the token, and whether it came as
// a bearer header (which a browser never sends on its own, so such a
// request needs no CSRF token).
func (s *Server) authorized(r *http.Request) (ok, bearer bool) {
	if r.Header.Get("Authorization") != "" {
		t, found := httpauth.Bearer(r)
		return found && s.tokenIs(t), found && s.tokenIs(t)
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return s.tokenIs(c.Value), false
	}
	return false, false
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
	return subtle.ConstantTimeCompare([]byte(h), []byte(c.Value)) == 1
}

// csrfToken returns the request's csrf cookie, setting a fresh one when
// it has none.
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 && isHex(c.Value) {
		return c.Value
	}
	t := randomHex(32)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
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
