package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/mcpserver"
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

// webHandler is the panel's handler with the operations endpoints and
// its requests counted.
func webHandler(reg *prometheus.Registry, s *web.Server, store any, token string) http.Handler {
	wm := opsmetrics.NewWeb(reg, s.StreamClients)
	ops := opshttp.Handler(opshttp.Options{Registry: reg, Token: token, Ready: opshttp.StoreReady(store)})
	return wm.Wrap(opshttp.Route(ops, s.Handler()), opshttp.Paths...)
}

// mcpHandler is mux with the operations endpoints beside it.
func mcpHandler(reg *prometheus.Registry, mux http.Handler, store any) http.Handler {
	ops := opshttp.Handler(opshttp.Options{Registry: reg, Ready: opshttp.StoreReady(store)})
	return opshttp.Route(ops, mux)
}
