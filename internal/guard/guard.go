// Package guard is what every listener of workspaced (serve --listen,
// web, mcp --http, and the HTTP API mounted on them) applies to a request
// before its handlers: limits per token and per client address (requests
// per second with a burst, live event streams held open at once), the
// Origin check, and the bearer challenge of every 401 (RFC 6750).
//
// A request that carries a valid token (Options.Identify says which) is
// counted against that token alone, so one token that floods is refused
// while every other token is served; a request without one — no token, a
// wrong or revoked one, a page of a panel without a token — is counted
// against its client address. Over a limit the answer is 429 with
// Retry-After. The MCP server's sessions per token are counted by the MCP
// server itself, with the limit given here (Limits.Sessions).
//
// docs/SECURITY.md says what each limit guards and its default.
package guard

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Limits: a team of fifty agents, each calling a tool every
// second or so, never meets them; an agent in a loop meets them within
// seconds.
const (
	// DefaultRate is the requests per second one token may sustain.
	DefaultRate = 50
	// DefaultBurst is how many requests one token may send at once.
	DefaultBurst = 200
	// DefaultAddressRate is the requests per second one client address
	// may sustain without a valid token.
	DefaultAddressRate = 20
	// DefaultAddressBurst is how many of those it may send at once.
	DefaultAddressBurst = 200
	// DefaultStreams is how many live event streams one token (or one
	// address without a token) may hold open at once: twice the sessions,
	// as an MCP client opens a stream for each of its sessions.
	DefaultStreams = 64
	// DefaultSessions is how many MCP sessions one token may hold open at
	// once (of the server's 256).
	DefaultSessions = 32
)

// Limits are what one token, or one client address without a token, may
// use of a listener.
type Limits struct {
	// Rate is the requests per second a token may sustain; Burst how many
	// it may send at once.
	Rate  float64
	Burst int
	// AddressRate and AddressBurst are the same for a client address,
	// counting the requests that carry no valid token.
	AddressRate  float64
	AddressBurst int
	// Streams bounds the live event streams (a GET asking for
	// text/event-stream) held open at once.
	Streams int
	// Sessions bounds the MCP sessions one token holds open at once.
	Sessions int
}

// WithDefaults returns l with every zero or negative field at its
// default.
func (l Limits) WithDefaults() Limits {
	if l.Rate <= 0 {
		l.Rate = DefaultRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultBurst
	}
	if l.AddressRate <= 0 {
		l.AddressRate = DefaultAddressRate
	}
	if l.AddressBurst <= 0 {
		l.AddressBurst = DefaultAddressBurst
	}
	if l.Streams <= 0 {
		l.Streams = DefaultStreams
	}
	if l.Sessions <= 0 {
		l.Sessions = DefaultSessions
	}
	return l
}

// Which limit refused a request: the values of Refusal.Limit and of the
// Observer's calls.
const (
	LimitRate        = "token_rate"
	LimitAddressRate = "address_rate"
	LimitStreams     = "streams"
	LimitSessions    = "sessions"
	LimitOrigin      = "origin"
)

// Refusal is a request refused by the guard (or by the MCP server's
// session limit): its status, why, and when to try again.
type Refusal struct {
	// Status is 429 for a limit, 403 for an origin.
	Status int
	// Limit is which one (Limit…).
	Limit string
	// RetryAfter is how long to wait before trying again (0 for an
	// origin: never).
	RetryAfter time.Duration
	// Msg and Hint say what happened and what to do.
	Msg, Hint string
}

// RetryAfterSeconds is RetryAfter in whole seconds, at least 1: the
// value of the Retry-After header.
func (f *Refusal) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(f.RetryAfter.Seconds())))
}

// SetHeader sets Retry-After on h when the refusal is a limit.
func (f *Refusal) SetHeader(h http.Header) {
	if f.Status == http.StatusTooManyRequests {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfterSeconds()))
	}
}

// Write answers the request with the refusal as JSON ({"error", "hint"},
// the panel's and the API's error body) and Retry-After.
func (f *Refusal) Write(w http.ResponseWriter, _ *http.Request) {
	f.SetHeader(w.Header())
	data, _ := json.Marshal(struct {
		Error string `json:"error"`
		Hint  string `json:"hint,omitempty"`
	}{f.Msg, f.Hint})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(f.Status)
	_, _ = w.Write(append(data, '\n'))
}

// Observer is told of every refusal, for metrics. It is safe for
// concurrent use.
type Observer interface {
	Refused(limit string)
}

// Options configure a Guard.
type Options struct {
	// Limits are the limits, WithDefaults.
	Limits Limits
	// Identify names the valid token r carries (a token id, "panel"):
	// ok is false when it carries none, or one not valid. Nil: no request
	// is identified, every one counts against its address.
	Identify func(r *http.Request) (who string, ok bool)
	// Origins are origins trusted besides the listener's own (as a
	// browser sends them: "https://agents.example.com").
	Origins []string
	// Proxies are the addresses of reverse proxies in front of the
	// listener (CIDR prefixes or addresses): for a request from one, the
	// client address is taken from X-Forwarded-For.
	Proxies []string
	// AllMethods are path prefixes whose every request has its Origin
	// checked (/mcp: the MCP transport's rule); elsewhere only the
	// requests that change something (not GET, HEAD or OPTIONS) are.
	AllMethods []string
	// Open are paths neither limited nor checked (/healthz, /readyz).
	Open []string
	// Reply writes a refusal; nil: Refusal.Write.
	Reply func(w http.ResponseWriter, r *http.Request, f *Refusal)
	// ResourceMetadata, when set, is the URL of the protected resource
	// metadata (RFC 9728) every 401's challenge names.
	ResourceMetadata string
	// Observer is told of every refusal; nil: nobody.
	Observer Observer
	// Log gets a line for a refusal, with the limit, the token's id or
	// the address, and the client's address: the first of each key and
	// limit, then at most one a minute, so that a flood does not flood
	// the log. Nil: no line.
	Log *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Guard applies Options to the requests of one listener. It is safe for
// concurrent use.
type Guard struct {
	opt     Options
	lim     Limits
	tokens  *buckets
	addrs   *buckets
	streams *counts
	origins *origins
	proxies *proxies

	mu     sync.Mutex
	logged map[string]time.Time // key and limit → when a refusal was last logged
}

// New checks opt and returns a Guard.
func New(opt Options) (*Guard, error) {
	g := &Guard{opt: opt, lim: opt.Limits.WithDefaults(), streams: newCounts(), logged: map[string]time.Time{}}
	if g.opt.Now == nil {
		g.opt.Now = time.Now
	}
	if g.opt.Reply == nil {
		g.opt.Reply = func(w http.ResponseWriter, r *http.Request, f *Refusal) { f.Write(w, r) }
	}
	var err error
	if g.origins, err = newOrigins(opt.Origins); err != nil {
		return nil, err
	}
	if g.proxies, err = newProxies(opt.Proxies); err != nil {
		return nil, err
	}
	g.tokens = newBuckets(g.lim.Rate, g.lim.Burst)
	g.addrs = newBuckets(g.lim.AddressRate, g.lim.AddressBurst)
	return g, nil
}

// Limits are the limits in force.
func (g *Guard) Limits() Limits { return g.lim }

// Client is the address r's client is counted under: its remote address
// or, from a trusted proxy, the client X-Forwarded-For names (an IPv6
// address as its /64). The panel counts its failed logins by it.
func (g *Guard) Client(r *http.Request) string { return g.proxies.client(r) }

// Wrap guards next: each request not Open is checked for its Origin,
// counted against its token or its address, and, when it opens a live
// stream, holds one of its streams until it ends; a 401 of next carries
// the bearer challenge.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(g.opt.Open, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if f := g.checkOrigin(r); f != nil {
			g.refuse(w, r, "address "+g.proxies.client(r), f)
			return
		}
		key, f := g.take(r)
		if f != nil {
			g.refuse(w, r, key, f)
			return
		}
		if isStream(r) {
			if !g.streams.acquire(key, g.lim.Streams) {
				g.refuse(w, r, key, &Refusal{Status: http.StatusTooManyRequests, Limit: LimitStreams, RetryAfter: 30 * time.Second,
					Msg:  fmt.Sprintf("too many live streams: %d are open for this %s, the most it may hold", g.lim.Streams, keyKind(key)),
					Hint: "close a stream you no longer read before opening another"})
				return
			}
			defer g.streams.release(key)
		}
		next.ServeHTTP(&challenger{ResponseWriter: w, r: r, meta: g.opt.ResourceMetadata}, r)
	})
}

// take counts r against its token, or its address when it has none, and
// returns the key it was counted under, or the refusal when over the
// limit.
func (g *Guard) take(r *http.Request) (string, *Refusal) {
	now := g.opt.Now()
	if g.opt.Identify != nil {
		if who, ok := g.opt.Identify(r); ok {
			key := "token " + who
			if wait, ok := g.tokens.take(key, now); !ok {
				return key, &Refusal{Status: http.StatusTooManyRequests, Limit: LimitRate, RetryAfter: wait,
					Msg: fmt.Sprintf("too many requests with this token: more than %s a second, %d at once",
						strconv.FormatFloat(g.lim.Rate, 'f', -1, 64), g.lim.Burst),
					Hint: "slow down, and try again after the Retry-After seconds"}
			}
			return key, nil
		}
	}
	key := "address " + g.proxies.client(r)
	if wait, ok := g.addrs.take(key, now); !ok {
		return key, &Refusal{Status: http.StatusTooManyRequests, Limit: LimitAddressRate, RetryAfter: wait,
			Msg: fmt.Sprintf("too many requests from this address without a valid token: more than %s a second, %d at once",
				strconv.FormatFloat(g.lim.AddressRate, 'f', -1, 64), g.lim.AddressBurst),
			Hint: "send a valid token ('Authorization: Bearer TOKEN'), and try again after the Retry-After seconds"}
	}
	return key, nil
}

func keyKind(key string) string {
	if strings.HasPrefix(key, "token ") {
		return "token"
	}
	return "address"
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, key string, f *Refusal) {
	if g.opt.Observer != nil {
		g.opt.Observer.Refused(f.Limit)
	}
	if g.opt.Log != nil && g.firstIn(key+" "+f.Limit, time.Minute) {
		g.opt.Log.Warn("http: request refused", "limit", f.Limit, "who", key, "remote", r.RemoteAddr, "path", r.URL.Path, "reason", f.Msg)
	}
	g.opt.Reply(w, r, f)
}

// firstIn reports whether nothing was logged under k for d; the map is
// emptied when it holds maxKeys, which only a flood of keys does.
func (g *Guard) firstIn(k string, d time.Duration) bool {
	now := g.opt.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.logged[k]; ok && now.Sub(last) < d {
		return false
	}
	if len(g.logged) >= maxKeys {
		clear(g.logged)
	}
	g.logged[k] = now
	return true
}

// isStream reports whether r opens a live event stream: a GET asking for
// text/event-stream (the panel's and the API's events, an MCP session's
// stream).
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}
