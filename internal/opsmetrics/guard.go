package opsmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/workspaced/workspaced/internal/guard"
)

// Guard is what the guard of a listener measures: the limits in force
// and the requests refused by each. It is the guard.Observer of the
// listener.
type Guard struct {
	refused *prometheus.CounterVec
}

// NewGuard registers the guard's metrics on reg: the limits l (a gauge
// by limit) and the refusals, each limit's counter there from the start
// at 0.
func NewGuard(reg prometheus.Registerer, l guard.Limits) *Guard {
	g := &Guard{refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_http_refused_total",
		Help: "Requests refused by a listener's limits and checks, by limit (token_rate, address_rate, streams, sessions, origin)."}, []string{"limit"})}
	for _, k := range []string{guard.LimitRate, guard.LimitAddressRate, guard.LimitStreams, guard.LimitSessions, guard.LimitOrigin} {
		g.refused.WithLabelValues(k)
	}
	limits := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workspaced_http_limit",
		Help: "The limits in force: requests per second and burst of a token and of an address without one, streams and MCP sessions per token."}, []string{"limit"})
	for k, v := range map[string]float64{"token_rate": l.Rate, "token_burst": float64(l.Burst), "address_rate": l.AddressRate,
		"address_burst": float64(l.AddressBurst), "streams": float64(l.Streams), "sessions": float64(l.Sessions)} {
		limits.WithLabelValues(k).Set(v)
	}
	reg.MustRegister(g.refused, limits)
	return g
}

// Refused counts a request refused for limit (guard's Limit…).
func (g *Guard) Refused(limit string) { g.refused.WithLabelValues(limit).Inc() }
