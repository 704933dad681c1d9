// Package opshttp serves the operations endpoints of workspaced's
// long-running commands (serve --listen, web, mcp --http): /healthz (the
// process answers), /readyz (it can do its job now) and /metrics
// (Prometheus' text format, with the Go runtime's and the process's
// collectors).
package opshttp

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// The endpoints' paths.
const (
	Health  = "/healthz"
	Ready   = "/readyz"
	Metrics = "/metrics"
)

// Paths are the endpoints' paths.
var Paths = []string{Health, Ready, Metrics}

// ReadyTimeout bounds one readiness check (a store that does not answer
// within it is not ready).
const ReadyTimeout = 2 * time.Second

// NewRegistry is a registry holding the Go runtime's and the process's
// collectors, for a command to add its own metrics to.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Options configure Handler.
type Options struct {
	// Registry is what /metrics serves.
	Registry *prometheus.Registry
	// Ready is nil when the command can do its job, else why not (the
	// 503's body, one line).
	Ready func(ctx context.Context) error
	// Token, when set, may come with a request of /metrics as
	// "Authorization: Bearer <token>": a metrics token.
	Token string
	// Allow, when set, admits a request of /metrics that carries the
	// listener's own credentials (an agent's token, the panel's).
	// With neither Token nor Allow /metrics is open: a loopback listener
	// without tokens. /healthz and /readyz say nothing that needs either.
	Allow func(*http.Request) bool
}

// Handler serves the three endpoints; any other path is not its own
// (404). It is safe for concurrent use.
func Handler(opt Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Health, func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET "+Ready, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := opt.Ready(ctx); err != nil {
			text(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		text(w, http.StatusOK, "ready")
	})
	metrics := promhttp.HandlerFor(opt.Registry, promhttp.HandlerOpts{Registry: opt.Registry})
	mux.HandleFunc("GET "+Metrics, func(w http.ResponseWriter, r *http.Request) {
		guarded := opt.Token != "" || opt.Allow != nil
		if guarded && !(opt.Token != "" && bearer(r, opt.Token)) && !(opt.Allow != nil && opt.Allow(r)) {
			w.Header().Set("WWW-Authenticate", guard.Challenge(r, ""))
			text(w, http.StatusUnauthorized, "no valid token: send 'Authorization: Bearer <token>'")
			return
		}
		metrics.ServeHTTP(w, r)
	})
	return mux
}

// Route sends the endpoints' paths to ops and everything else to next.
func Route(ops, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case Health, Ready, Metrics:
			ops.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// StoreReady is a readiness check for a command that needs only its store
// to answer: ready when store is no workspace.Pinger, or its Ping
// succeeds.
func StoreReady(store any) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if p, ok := workspace.As[workspace.Pinger](store); ok {
			return p.Ping(ctx)
		}
		return nil
	}
}

func bearer(r *http.Request, token string) bool {
	t, ok := httpauth.Bearer(r)
	return ok && httpauth.Equal(t, token)
}

func text(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
