package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/tokens"
)

// The panel's login. A person logs in with the panel's token (the
// --token-file secret: user "operator") or with a token of 'workspaced
// token add' that holds the right panel (user: its agent). The cookie the
// login sets is a random session id, never the secret: the session lives
// in this process, ends at its expiry, at logout, or when the token it
// was opened with is revoked, expires or is rotated past its overlap,
// and its live streams end with it. Failed logins are counted per
// client address: after a burst, one more attempt is let through per
// interval and the others are refused (429 with Retry-After) unchecked.

// Defaults of the login.
const (
	// DefaultSessionTTL is how long a login lasts.
	DefaultSessionTTL = 12 * time.Hour
	// DefaultLoginBurst is how many logins a client may get wrong before
	// it is slowed.
	DefaultLoginBurst = 5
	// DefaultLoginEvery is how often a client that used its burst may try
	// again: its other attempts are refused.
	DefaultLoginEvery = time.Minute
	// maxSessions and maxClients bound what the login keeps in memory.
	maxSessions = 4096
	maxClients  = 4096
)

// Users of the panel that are no token's agent.
const (
	// OperatorUser logged in with the panel's own token.
	OperatorUser = "operator"
	// LocalUser is anyone on this machine, on a loopback panel without a
	// token.
	LocalUser = "local"
)

// A login's outcome, as LoginObserver hears it.
const (
	LoginOK        = "ok"
	LoginFailed    = "failed"    // a wrong token
	LoginThrottled = "throttled" // refused unchecked: too many failures
)

// LoginObserver is told of every login attempt, for metrics. It is safe
// for concurrent use.
type LoginObserver interface{ Login(outcome string) }

const sessionCookie = "wsd_session"

// who is the person behind a request.
type who struct {
	user  string // OperatorUser, LocalUser, or the agent of a panel token
	token string // the id of a panel token; "" for the others
	from  string // the client's address
}

type whoKey struct{}

// whoOf is the person behind r (set by guard).
func whoOf(r *http.Request) who {
	w, _ := r.Context().Value(whoKey{}).(who)
	return w
}

// session is one login.
type session struct {
	who     who
	expires time.Time
	ctx     context.Context // done at logout, expiry or the token's end
	cancel  context.CancelFunc
	unhold  func()
}

// logins keeps the sessions and the failed attempts of each client.
type logins struct {
	ttl   time.Duration
	burst int
	every time.Duration
	now   func() time.Time
	watch *tokens.Watch // nil without panel tokens

	mu       sync.Mutex
	sessions map[string]*session // by the SHA-256 of the cookie
	clients  map[string]*rate.Limiter
}

func newLogins(cfg Config) *logins {
	l := &logins{ttl: cfg.SessionTTL, burst: cfg.LoginBurst, every: cfg.LoginEvery, now: cfg.Now,
		sessions: map[string]*session{}, clients: map[string]*rate.Limiter{}}
	if l.now == nil {
		l.now = time.Now
	}
	if l.ttl <= 0 {
		l.ttl = DefaultSessionTTL
	}
	if l.burst <= 0 {
		l.burst = DefaultLoginBurst
	}
	if l.every <= 0 {
		l.every = DefaultLoginEvery
	}
	if cfg.Grants != nil {
		l.watch = tokens.NewWatch(cfg.Grants, 0, cfg.Logger)
	}
	return l
}

func sessionKey(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// open starts a session for w and returns its cookie value.
func (l *logins) open(w who) string {
	cookie := randomHex(32)
	key := sessionKey(cookie)
	now := l.now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(l.ttl))
	s := &session{who: w, expires: now.Add(l.ttl), ctx: ctx, cancel: cancel}
	if l.watch != nil && w.token != "" {
		s.unhold = l.watch.Hold(w.token, func() { l.close(key) })
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sessions) >= maxSessions {
		l.sweep(now, true)
	}
	l.sessions[key] = s
	return cookie
}

// sweep drops the sessions that ended; with oldest, the oldest too when
// no session ended. l.mu is held.
func (l *logins) sweep(now time.Time, oldest bool) {
	var first string
	for k, s := range l.sessions {
		if !now.Before(s.expires) || s.ctx.Err() != nil {
			l.drop(k, s)
			continue
		}
		if first == "" || s.expires.Before(l.sessions[first].expires) {
			first = k
		}
	}
	if oldest && len(l.sessions) >= maxSessions && first != "" {
		l.drop(first, l.sessions[first])
	}
}

func (l *logins) drop(key string, s *session) {
	delete(l.sessions, key)
	s.cancel()
	if s.unhold != nil {
		s.unhold()
	}
}

// get is the live session of cookie.
func (l *logins) get(cookie string) (*session, bool) {
	key := sessionKey(cookie)
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[key]
	if !ok {
		return nil, false
	}
	if !l.now().Before(s.expires) || s.ctx.Err() != nil {
		l.drop(key, s)
		return nil, false
	}
	return s, true
}

// close ends the session of the cookie whose key is key.
func (l *logins) close(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sessions[key]; ok {
		l.drop(key, s)
	}
}

// wait is how long client must wait before its next attempt is checked:
// 0 while it has attempts left.
func (l *logins) wait(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[client]
	if !ok {
		return 0
	}
	left := lim.TokensAt(l.now())
	if left >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - left) * float64(l.every)))
}

// failed counts a wrong attempt of client.
func (l *logins) failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim, ok := l.clients[client]
	if !ok {
		if len(l.clients) >= maxClients {
			for c, o := range l.clients {
				if o.TokensAt(now) >= float64(l.burst) {
					delete(l.clients, c)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.clients[client] = lim
	}
	lim.AllowN(now, 1)
}

// succeeded forgets the failures of client.
func (l *logins) succeeded(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
}

// closeAll ends every session and stops following the tokens.
func (l *logins) closeAll() {
	l.mu.Lock()
	for k, s := range l.sessions {
		l.drop(k, s)
	}
	l.mu.Unlock()
	if l.watch != nil {
		l.watch.Close()
	}
}

// clientOf is the address failures are counted by: the client's IP, or
// what Config.ClientOf says.
func (s *Server) clientOf(r *http.Request) string {
	if s.cfg.ClientOf != nil {
		return s.cfg.ClientOf(r)
	}
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// checkToken is who a token presented at login or as a bearer stands for:
// the operator for the panel's token, the agent of a token holding the
// right panel.
func (s *Server) checkToken(t string, r *http.Request) (who, bool) {
	if t == "" {
		return who{}, false
	}
	if s.cfg.Token != "" && s.tokenIs(t) {
		return who{user: OperatorUser, from: r.RemoteAddr}, true
	}
	if s.cfg.Grants != nil {
		if g, err := s.cfg.Grants.Lookup(t); err == nil && g.Can(tokens.RightPanel) {
			return who{user: g.Agent, token: g.ID(), from: r.RemoteAddr}, true
		}
	}
	return who{}, false
}

// login checks the token a person typed and opens a session, whose id —
// not the token — is the cookie: one scripts cannot read, other sites do
// not send, and a browser sends only over TLS when the panel is served
// over TLS or behind a TLS proxy.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	client := s.clientOf(r)
	rec := audit.Record{Door: audit.DoorPanel, Action: "login", From: r.RemoteAddr}
	if d := s.logins.wait(client); d > 0 {
		secs := int(math.Ceil(d.Seconds()))
		s.loginObserved(LoginThrottled)
		rec.Outcome, rec.Reason = audit.Refused, "too many failed logins from "+client
		s.cfg.Audit.Record(r.Context(), rec)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.WriteHeader(http.StatusTooManyRequests)
		s.render(w, "login.html", pageData{Title: "Log in", Error: "Too many wrong tokens from your address: try again in " + strconv.Itoa(secs) + " s."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	var p who
	ok := false
	if err := r.ParseForm(); err == nil {
		p, ok = s.checkToken(r.PostForm.Get("token"), r)
	}
	if !ok {
		s.logins.failed(client)
		s.loginObserved(LoginFailed)
		rec.Outcome, rec.Reason = audit.Refused, "not the token"
		s.cfg.Audit.Record(r.Context(), rec)
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login.html", pageData{Title: "Log in", Error: "That is not the token."})
		return
	}
	s.logins.succeeded(client)
	s.loginObserved(LoginOK)
	rec.Outcome, rec.User, rec.Token = audit.OK, p.user, p.token
	s.cfg.Audit.Record(r.Context(), rec)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.logins.open(p), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r), MaxAge: int(s.logins.ttl.Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the request's session (its streams with it) and clears the
// cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.logins.close(sessionKey(c.Value))
	}
	p := whoOf(r)
	s.cfg.Audit.Record(r.Context(), audit.Record{Door: audit.DoorPanel, Action: "logout", Outcome: audit.OK, User: p.user, Token: p.token, From: r.RemoteAddr})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r), MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// secure reports whether the panel's cookies must be sent over TLS only.
func (s *Server) secure(r *http.Request) bool { return r.TLS != nil || s.cfg.BehindTLSProxy }

func (s *Server) loginObserved(outcome string) {
	if s.cfg.Logins != nil {
		s.cfg.Logins.Login(outcome)
	}
}
