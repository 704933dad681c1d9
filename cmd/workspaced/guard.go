package main

import (
	"flag"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workspaced/workspaced/api"
	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/workspace"
)

// The guard of every listener (serve --listen, web, mcp --http): the
// limits per token and per address, the Origin check and the bearer
// challenge (internal/guard), set from workspace.json's "http" and the
// flags, which win.

// guardFlags are the flags of a listener's limits and trusts.
type guardFlags struct {
	rate, addressRate                  *float64
	burst, addressBurst, streams, sess *int
	origins, proxies                   stringList
}

const guardUsage = `Every listener limits each token to --rate requests a second with bursts
of --burst (default 50 and 200), each client address without a valid token
to --address-rate and --address-burst (20 and 200), and each token to
--streams-per-token live event streams (64) and --sessions-per-token MCP
sessions (32); over a limit the answer is 429 with Retry-After. Requests
from a browser page of another origin are refused (403) unless
--trust-origin names it; behind a reverse proxy, --trust-proxy ADDR makes
its X-Forwarded-For name the client. workspace.json's "http" sets the same
(docs/SECURITY.md).`

// addGuardFlags adds the flags of a listener's limits; streams adds
// those of live streams and MCP sessions (serve --listen has neither).
func addGuardFlags(fs *flag.FlagSet, streams bool) *guardFlags {
	g := &guardFlags{
		rate:         fs.Float64("rate", 0, "requests per second one token may sustain, `N` (default from workspace.json, else 50)"),
		burst:        fs.Int("burst", 0, "requests one token may send at once, `N` (default from workspace.json, else 200)"),
		addressRate:  fs.Float64("address-rate", 0, "requests per second one client address may sustain without a valid token, `N` (default 20)"),
		addressBurst: fs.Int("address-burst", 0, "requests one client address may send at once without a valid token, `N` (default 200)"),
		streams:      new(int),
		sess:         new(int),
	}
	if streams {
		g.streams = fs.Int("streams-per-token", 0, "live event streams one token may hold open, `N` (default 64)")
		g.sess = fs.Int("sessions-per-token", 0, "MCP sessions one token may hold open, `N` (default 32)")
	}
	fs.Var(&g.origins, "trust-origin", "trust browser pages of `ORIGIN` (https://host[:port]) besides the listener's own (repeatable)")
	fs.Var(&g.proxies, "trust-proxy", "believe X-Forwarded-For from the reverse proxy at `ADDR` (an address or a CIDR prefix; repeatable)")
	return g
}

// check refuses negative limits.
func (g *guardFlags) check(cmd string) error {
	if *g.rate < 0 || *g.addressRate < 0 || *g.burst < 0 || *g.addressBurst < 0 || *g.streams < 0 || *g.sess < 0 {
		return usageHint(cmd, "--rate, --burst, --address-rate, --address-burst, --streams-per-token and --sessions-per-token must not be negative")
	}
	return nil
}

// limits are the flags over the settings, with the defaults for what
// neither sets.
func (g *guardFlags) limits(s workspace.HTTPSettings) guard.Limits {
	or := func(flag, setting float64) float64 {
		if flag > 0 {
			return flag
		}
		return setting
	}
	ori := func(flag, setting int) int {
		if flag > 0 {
			return flag
		}
		return setting
	}
	return guard.Limits{
		Rate: or(*g.rate, s.RequestsPerSecond), Burst: ori(*g.burst, s.Burst),
		AddressRate: or(*g.addressRate, s.AddressRequestsPerSecond), AddressBurst: ori(*g.addressBurst, s.AddressBurst),
		Streams: ori(*g.streams, s.StreamsPerToken), Sessions: ori(*g.sess, s.SessionsPerToken),
	}.WithDefaults()
}

// newGuard is the guard of a listener whose requests identify is asked
// to name (nil: none carries a token), with its metrics on reg and its
// refusals said to log. Its
// /mcp answers refusals as JSON-RPC errors; /healthz and /readyz are
// neither limited nor checked.
func (g *guardFlags) newGuard(cmd string, s workspace.HTTPSettings, reg prometheus.Registerer, log *slog.Logger, identify func(*http.Request) (string, bool)) (*guard.Guard, *opsmetrics.Guard, error) {
	l := g.limits(s)
	m := opsmetrics.NewGuard(reg, l)
	gd, err := guard.New(guard.Options{
		Limits:     l,
		Identify:   identify,
		Origins:    append(append([]string{}, s.TrustedOrigins...), g.origins...),
		Proxies:    append(append([]string{}, s.TrustedProxies...), g.proxies...),
		AllMethods: []string{"/mcp"},
		Open:       []string{opshttp.Health, opshttp.Ready},
		Reply:      replyRefusal,
		Observer:   m,
		Log:        log,
	})
	if err != nil {
		return nil, nil, usageHint(cmd, "%v", err)
	}
	return gd, m, nil
}

// replyRefusal answers a refusal of /mcp as a JSON-RPC error, of the API
// as a problem (with Retry-After), any other as the panel's JSON error.
func replyRefusal(w http.ResponseWriter, r *http.Request, f *guard.Refusal) {
	switch {
	case r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/"):
		mcpserver.WriteRefusal(w, r, f)
	case strings.HasPrefix(r.URL.Path, api.Prefix):
		f.SetHeader(w.Header())
		api.WriteProblem(w, r, f.Status, f.Msg, f.Hint)
	default:
		f.Write(w, r)
	}
}

// anyWho names a request by the first of ids that knows its token.
func anyWho(ids ...func(*http.Request) (string, bool)) func(*http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		for _, id := range ids {
			if id == nil {
				continue
			}
			if who, ok := id(r); ok {
				return who, true
			}
		}
		return "", false
	}
}

// secretWho names a request carrying secret as its bearer token name (nil
// when there is no secret).
func secretWho(name, secret string) func(*http.Request) (string, bool) {
	if secret == "" {
		return nil
	}
	return func(r *http.Request) (string, bool) {
		t, ok := httpauth.Bearer(r)
		return name, ok && httpauth.Equal(t, secret)
	}
}

// keeperWho names a request by the agent's token it carries, when st
// keeps tokens and holds that one (nil when st keeps none).
func keeperWho(st workspace.Store) func(*http.Request) (string, bool) {
	k, err := tokenKeeper("limit the listener's tokens", st)
	if err != nil {
		return nil
	}
	return func(r *http.Request) (string, bool) {
		t, ok := httpauth.Bearer(r)
		if !ok {
			return "", false
		}
		return httpauth.TokenID(r, k, t)
	}
}

// mcpObserver counts the MCP server's refusals, and its sessions refused
// for their token among the guard's refusals too.
type mcpObserver struct {
	*opsmetrics.MCP
	guard *opsmetrics.Guard
}

func (o mcpObserver) Refused(reason string) {
	o.MCP.Refused(reason)
	if reason == mcpserver.RefusalTokenSessions && o.guard != nil {
		o.guard.Refused(guard.LimitSessions)
	}
}
