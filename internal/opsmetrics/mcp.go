package opsmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MCP is what workspaced mcp --http (and web's /mcp) measures: sessions
// open, tool calls by tool and outcome, requests refused by reason. It
// is the mcpserver.Observer of the HTTP server.
type MCP struct {
	calls    *prometheus.CounterVec
	refusals *prometheus.CounterVec
}

// NewMCP registers the MCP server's metrics on reg; sessions is how many
// sessions are open.
func NewMCP(reg prometheus.Registerer, sessions func() int) *MCP {
	m := &MCP{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_mcp_tool_calls_total",
			Help: "Tool calls, by tool and outcome (ok, error: the tool answered an error)."}, []string{"tool", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_mcp_refusals_total",
			Help: "Requests and sessions refused, by reason."}, []string{"reason"}),
	}
	reg.MustRegister(m.calls, m.refusals, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "workspaced_mcp_sessions",
		Help: "MCP sessions open."}, func() float64 { return float64(sessions()) }))
	return m
}

// ToolCalled counts a call of tool (a registered tool's name: a bounded
// set) with its outcome.
func (m *MCP) ToolCalled(tool, outcome string) { m.calls.WithLabelValues(tool, outcome).Inc() }

// Refused counts a refusal (one of mcpserver's Refusal… reasons).
func (m *MCP) Refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }
