package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// strongToken is a secret as 'openssl rand -hex 32' makes one.
const strongToken = "3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// loginCount counts the login attempts by outcome.
type loginCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *loginCount) Login(o string) { l.mu.Lock(); l.n[o]++; l.mu.Unlock() }
func (l *loginCount) get(o string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[o]
}

// auditBuf is an audit log kept in memory.
type auditBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (a *auditBuf) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b.Write(p)
}
func (a *auditBuf) String() string  { a.mu.Lock(); defer a.mu.Unlock(); return a.b.String() }
func (a *auditBuf) log() *audit.Log { return audit.New(slog.New(slog.NewJSONHandler(a, nil))) }

func (p *panel) login(c *http.Client, token string) resp {
	p.t.Helper()
	return p.do(c, "POST", "/login", "token="+token, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
}

// noRedirect is a client that reports redirects instead of following them.
func (p *panel) noRedirect() *http.Client {
	c := *p.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// TestLoginThrottled: 25 wrong tokens from one address are not 25
// answers of 401 in milliseconds: after 5 the address is refused (429,
// Retry-After) without its token being checked — the right one too —
// until a minute passes, when one more attempt is checked; every attempt
// is counted by outcome and recorded in the audit.
func TestLoginThrottled(t *testing.T) {
	clk := &clock{t: time.Now()}
	count := &loginCount{n: map[string]int{}}
	var ab auditBuf
	p := newPanel(t, Config{Token: strongToken, Now: clk.Now, Logins: count, Audit: ab.log()})
	c := p.noRedirect()
	codes := map[int]int{}
	for range 25 {
		r := p.login(c, "wrong")
		codes[r.code]++
		if r.code == http.StatusTooManyRequests && r.h.Get("Retry-After") == "" {
			t.Fatal("a 429 without Retry-After")
		}
	}
	if codes[401] != DefaultLoginBurst || codes[429] != 25-DefaultLoginBurst {
		t.Fatalf("25 wrong logins answered %v, want %d × 401 then 429", codes, DefaultLoginBurst)
	}
	if r := p.login(c, strongToken); r.code != http.StatusTooManyRequests || !strings.Contains(r.body, "try again in") {
		t.Fatalf("the right token while throttled: %d, want 429 unchecked", r.code)
	}
	clk.add(DefaultLoginEvery)
	if r := p.login(c, strongToken); r.code != http.StatusSeeOther {
		t.Fatalf("the right token a minute later: %d %s", r.code, r.body)
	}
	// A success forgets the failures.
	for range DefaultLoginBurst {
		if r := p.login(c, "wrong"); r.code != http.StatusUnauthorized {
			t.Fatalf("after a success, a wrong token: %d, want 401", r.code)
		}
	}
	if count.get(LoginOK) != 1 || count.get(LoginFailed) != 2*DefaultLoginBurst || count.get(LoginThrottled) != 26-DefaultLoginBurst {
		t.Fatalf("counted %v", count.n)
	}
	log := ab.String()
	if strings.Count(log, `"action":"login","outcome":"refused"`) != 26+DefaultLoginBurst || !strings.Contains(log, `"reason":"too many failed logins from 127.0.0.1"`) ||
		!strings.Contains(log, `"action":"login","outcome":"ok","user":"operator"`) || strings.Contains(log, strongToken) {
		t.Fatalf("audit:\n%s", log)
	}
}

// TestSession: the login's cookie is a random session id, never the
// secret, Secure behind a TLS proxy; logging out ends the session and the
// streams it opened; a session ends at its expiry.
func TestSession(t *testing.T) {
	clk := &clock{t: time.Now()}
	var ab auditBuf
	p := newPanel(t, Config{Token: strongToken, BehindTLSProxy: true, Now: clk.Now, Audit: ab.log()})
	seed(t, p.ws)
	c := p.noRedirect()
	r := p.login(c, strongToken)
	ck := r.h.Get("Set-Cookie")
	if r.code != http.StatusSeeOther || strings.Contains(ck, strongToken) || !strings.Contains(ck, "Secure") || !strings.Contains(ck, "HttpOnly") {
		t.Fatalf("login: %d %q", r.code, ck)
	}
	session := strings.SplitN(ck, ";", 2)[0]
	if v := strings.TrimPrefix(session, sessionCookie+"="); len(v) != 64 || !isHex(v) {
		t.Fatalf("the session id %q is not 32 random bytes", v)
	}
	hdr := map[string]string{"Cookie": session}
	page := p.do(c, "GET", "/", "", hdr)
	if page.code != 200 || !strings.Contains(page.body, `id="logout"`) || !strings.Contains(page.body, ">operator<") {
		t.Fatalf("the page of a logged-in person: %d\n%s", page.code, page.body)
	}
	if ck := page.h.Get("Set-Cookie"); !strings.Contains(ck, csrfCookie) || !strings.Contains(ck, "Secure") {
		t.Fatalf("the csrf cookie behind a TLS proxy: %q", ck)
	}
	csrf := strings.SplitN(strings.TrimPrefix(page.h.Get("Set-Cookie"), csrfCookie+"="), ";", 2)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := p.openStream(ctx, "/api/events", hdr)
	// A logout without the page's CSRF token is refused.
	if r := p.do(c, "POST", "/logout", "", map[string]string{"Cookie": session, "Content-Type": "application/x-www-form-urlencoded"}); r.code != http.StatusForbidden {
		t.Fatalf("a logout without the CSRF token: %d", r.code)
	}
	r = p.do(c, "POST", "/logout", "csrf="+csrf, map[string]string{"Cookie": session + "; " + csrfCookie + "=" + csrf, "Content-Type": "application/x-www-form-urlencoded"})
	if r.code != http.StatusSeeOther || r.h.Get("Location") != "/login" || !strings.Contains(r.h.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: %d %q %q", r.code, r.h.Get("Location"), r.h.Get("Set-Cookie"))
	}
	waitFor(t, "the session's stream to end at logout", 5*time.Second, func() bool {
		select {
		case _, open := <-events:
			return !open
		default:
			return false
		}
	})
	if r := p.do(nil, "GET", "/api/tasks", "", hdr); r.code != 401 {
		t.Fatalf("the session after logout: %d", r.code)
	}
	// Expiry.
	session = strings.SplitN(p.login(c, strongToken).h.Get("Set-Cookie"), ";", 2)[0]
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Cookie": session}); r.code != 200 {
		t.Fatalf("a new session: %d", r.code)
	}
	clk.add(DefaultSessionTTL)
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Cookie": session}); r.code != 401 {
		t.Fatalf("a session past its expiry: %d", r.code)
	}
	if log := ab.String(); !strings.Contains(log, `"action":"logout","outcome":"ok","user":"operator"`) {
		t.Fatalf("audit:\n%s", log)
	}
}

// TestPanelTokenLogin: a token holding the right panel logs in as its
// agent, and the audit names that person for the panel's actions (the
// protocol records "human"); a token without the right does not log in;
// revoking the token ends its sessions and their streams.
func TestPanelTokenLogin(t *testing.T) {
	var ab auditBuf
	ws, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	k := tokens.Tree(ws)
	p := servePanel(t, ws, Config{Token: strongToken, Audit: ab.log(), Grants: k})
	t.Cleanup(p.s.Close)
	seed(t, p.ws)
	ctx := context.Background()
	alice, ga, err := tokens.Add(ctx, k, tokens.Grant{Agent: "alice", Tasks: []string{tokens.AllTasks}, May: []string{tokens.RightPanel}})
	if err != nil {
		t.Fatal(err)
	}
	worker, _, err := tokens.Add(ctx, k, tokens.Grant{Agent: "worker", Tasks: []string{tokens.AllTasks}, May: []string{tokens.RightClaim}})
	if err != nil {
		t.Fatal(err)
	}
	c := p.noRedirect()
	if r := p.login(c, worker); r.code != http.StatusUnauthorized {
		t.Fatalf("a token without the right panel: %d", r.code)
	}
	r := p.login(c, alice)
	if r.code != http.StatusSeeOther {
		t.Fatalf("alice's login: %d", r.code)
	}
	session := strings.SplitN(r.h.Get("Set-Cookie"), ";", 2)[0]
	hdr := map[string]string{"Cookie": session}
	var tok struct{ Token string }
	p.do(c, "GET", "/api/csrf", "", hdr).json(t, &tok)
	hdr["Cookie"] += "; " + csrfCookie + "=" + tok.Token
	hdr[csrfHeader] = tok.Token
	if r := p.do(c, "POST", "/api/tasks/t1/cancel", `{"reason":"stop"}`, hdr); r.code != http.StatusAccepted {
		t.Fatalf("alice cancels: %d %s", r.code, r.body)
	}
	log := ab.String()
	if !strings.Contains(log, `"action":"POST /api/tasks/{id}/cancel","outcome":"ok","agent":"human","user":"alice","token":"`+ga.ID()+`"`) || !strings.Contains(log, `"task":"t1"`) {
		t.Fatalf("the audit does not name alice for her action:\n%s", log)
	}
	ctxS, cancel := context.WithCancel(ctx)
	defer cancel()
	events := p.openStream(ctxS, "/api/events", map[string]string{"Cookie": session})
	if _, err := tokens.Revoke(ctx, k, ga.ID(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revoked token's stream to end", 5*time.Second, func() bool {
		select {
		case _, open := <-events:
			return !open
		default:
			return false
		}
	})
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Cookie": session}); r.code != 401 {
		t.Fatalf("the session of a revoked token: %d", r.code)
	}
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Authorization": "Bearer " + alice}); r.code != 401 {
		t.Fatalf("a revoked token as a bearer: %d", r.code)
	}
}

// TestReadTokenFile: the panel's token file must be private and its token
// strong; each refusal says how to make one.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		return path
	}
	cases := []struct {
		name, data string
		mode       os.FileMode
		want       string // "" for accepted
	}{
		{"openssl hex", strongToken + "\n", 0o600, ""},
		{"base64 of 24 bytes", "q83vEjRWeJq83vEjRWeJq83vEjRWeJq8\n", 0o400, ""},
		{"workspace token", "wsd_q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8", 0o600, ""},
		{"3 bytes", "abc", 0o600, "fewer than 128"},
		{"31 hex digits", strongToken[:31], 0o600, "fewer than 128"},
		{"one letter repeated", strings.Repeat("a", 200), 0o600, "fewer than 128"},
		{"world-readable", strongToken, 0o644, "chmod 600"},
		{"group-readable", strongToken, 0o640, "chmod 600"},
		{"empty", "  \n", 0o600, "it is empty"},
		{"huge", strings.Repeat(strongToken, 100), 0o600, "more than 4 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := ReadTokenFile(write(strings.ReplaceAll(c.name, " ", "_"), c.data, c.mode))
			if c.want == "" {
				if err != nil || tok != strings.TrimSpace(c.data) {
					t.Fatalf("refused a good file: %q, %v", tok, err)
				}
				return
			}
			var we *workspace.Error
			if !errors.As(err, &we) || !strings.Contains(err.Error()+" hint: "+we.Hint, c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if !strings.Contains(we.Hint, "openssl rand") && !strings.Contains(we.Hint, "chmod 600") {
				t.Fatalf("no hint on how to make one: %v (hint %q)", err, we.Hint)
			}
		})
	}
	if _, err := ReadTokenFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
}

// TestLoginThrottledPerClient: the failures of one client do not slow
// another, when the address comes from the listener's guard (a trusted
// proxy's X-Forwarded-For).
func TestLoginThrottledPerClient(t *testing.T) {
	p := newPanel(t, Config{Token: strongToken, ClientOf: func(r *http.Request) string { return r.Header.Get("X-Test-Client") }})
	c := p.noRedirect()
	login := func(client, token string) int {
		return p.do(c, "POST", "/login", "token="+token, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Test-Client": client}).code
	}
	for range DefaultLoginBurst + 3 {
		login("10.0.0.1", "wrong")
	}
	if code := login("10.0.0.1", strongToken); code != http.StatusTooManyRequests {
		t.Fatalf("the guessing client: %d, want 429", code)
	}
	if code := login("10.0.0.2", strongToken); code != http.StatusSeeOther {
		t.Fatalf("another client behind the same proxy: %d, want 303", code)
	}
}
