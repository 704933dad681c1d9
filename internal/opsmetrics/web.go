package opsmetrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Web is what workspaced web measures: the live streams open and the
// requests by route and status. Routes are the panel's patterns (GET
// /task/{id}, …), never a path as requested.
type Web struct {
	requests *prometheus.CounterVec
}

// NewWeb registers the panel's metrics on reg; clients is how many live
// streams (SSE) are open.
func NewWeb(reg prometheus.Registerer, clients func() int) *Web {
	w := &Web{requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_web_requests_total",
		Help: "Requests answered, by route (the pattern that served it) and status code."}, []string{"route", "status"})}
	reg.MustRegister(w.requests, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "workspaced_web_sse_clients",
		Help: "Live streams (server-sent events) open."}, func() float64 { return float64(clients()) }))
	return w
}

// Wrap counts each request next answers. The route is the pattern of the
// ServeMux that routed it (which sets it on the request it was handed),
// else the path itself when it is one of fixed (the operations
// endpoints), else "other": a label never holds a path as requested.
func (w *Web) Wrap(next http.Handler, fixed ...string) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: rw, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "other"
			for _, f := range fixed {
				if r.URL.Path == f {
					route = f
				}
			}
		}
		w.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
	})
}

// statusWriter notes the status a handler answered with; it passes
// flushes on (the live streams) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	s.wrote = true
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Logins counts the panel's login attempts by outcome: ok, failed (a
// wrong token), throttled (refused unchecked after too many failures from
// one address). It is the panel's web.LoginObserver.
type Logins struct{ attempts *prometheus.CounterVec }

// NewLogins registers the login counter on reg, every outcome at zero.
func NewLogins(reg prometheus.Registerer, outcomes ...string) *Logins {
	l := &Logins{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_web_logins_total",
		Help: "Login attempts on the panel, by outcome (ok, failed: a wrong token, throttled: refused unchecked after too many failures from one address)."}, []string{"outcome"})}
	for _, o := range outcomes {
		l.attempts.WithLabelValues(o)
	}
	reg.MustRegister(l.attempts)
	return l
}

// Login counts one attempt.
func (l *Logins) Login(outcome string) { l.attempts.WithLabelValues(outcome).Inc() }
