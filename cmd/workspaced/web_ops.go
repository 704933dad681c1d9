package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/web"
)

// The operations endpoints of web and mcp --http ride on their listener:
// /healthz, /readyz (ready while the store answers) and /metrics (behind
// the panel's token when it has one).

// mcpMetrics registers the MCP server's metrics on reg and returns the
// observer to give mcpserver.NewHTTP; sessions is read once h is known.
func mcpMetrics(reg prometheus.Registerer, h **mcpserver.HTTP) *opsmetrics.MCP {
	return opsmetrics.NewMCP(reg, func() int {
		if *h == nil {
			return 0
		}
		return (*h).Sessions()
	})
}

// webHandler is the panel's handler with the operations endpoints behind
// the listener's guard, and its requests counted (those refused too).
// /metrics wants the panel's token when the panel has one.
func webHandler(reg *prometheus.Registry, s *web.Server, gd *guard.Guard, store any, token string, v *oauth.Verifier) http.Handler {
	wm := opsmetrics.NewWeb(reg, s.StreamClients)
	opt := opshttp.Options{Registry: reg, Token: token, Ready: opshttp.StoreReady(store)}
	if token != "" {
		opt.Allow = func(r *http.Request) bool { _, ok := s.Who(r); return ok }
	}
	// Once goes outside the counting: the route a request is counted by is
	// the pattern the mux sets on that same request, not on a copy.
	return httpauth.Once(wm.Wrap(gd.Wrap(opshttp.Route(opshttp.Handler(opt), withMetadata(v, s.Handler()))), opshttp.Paths...))
}
