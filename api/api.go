// Package api is the workspace's HTTP API for programs, version 1: every
// operation an agent has on the command line — tasks, plans, claims,
// outputs, reviews and done markers with the daemon's verdict, env and
// session entries, memory in its scopes and namespaces, context and
// preamble, events — as JSON routes under /api/v1/, described by the
// OpenAPI 3.1 document openapi.json (embedded, served at
// /api/v1/openapi.json).
//
// It is a door: transport over the operations layer (service) and the
// store's contract, never a store of its own. Who a request acts as comes
// from the listener's gate (internal/httpauth): a bearer token's grant, or
// on a trusted loopback listener the agent the Workspace-Agent header
// names. The API refuses what that agent may not do, as the MCP tools do.
// Errors are RFC 9457 problem details carrying the workspace's error kind
// and hint. A Handler is safe for concurrent use.
package api

import (
	_ "embed"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// Prefix is where the API is mounted.
const Prefix = "/api/v1/"

// Document is the OpenAPI 3.1 document describing every route.
//
//go:embed openapi.json
var Document []byte

// Defaults of Config.
const (
	// DefaultMaxWait bounds a wait for the daemon's verdict.
	DefaultMaxWait = 5 * time.Minute
	// DefaultKeepAlive is how often an idle event stream gets a comment.
	DefaultKeepAlive = 25 * time.Second
	// bodySlack is what a body may carry beyond the largest value: the
	// envelope, the key, the description.
	bodySlack = 64 << 10
)

// Config is what a Handler serves.
type Config struct {
	// Store is the workspace served.
	Store workspace.Store
	// Gate says who each request acts as and refuses one it cannot
	// admit (internal/httpauth): the listener's rules.
	Gate *httpauth.Gate
	// MaxBodyBytes bounds a request body (413 beyond it); 0 means the
	// store's value limit plus room for the envelope.
	MaxBodyBytes int64
	// MaxWait bounds a wait for a verdict (DefaultMaxWait when 0).
	MaxWait time.Duration
	// KeepAlive is how often an idle event stream gets a comment line
	// (DefaultKeepAlive when 0).
	KeepAlive time.Duration
	// PollEvery is how often an open event stream reads on where the
	// store has no watch (DefaultPollEvery when 0); over a store that has
	// one, a stream reads only when the watch says it changed.
	PollEvery time.Duration
	// Log receives a line for every refusal (slog.Default when nil).
	Log *slog.Logger
}

// Handler serves the API under Prefix.
type Handler struct {
	cfg Config
	st  workspace.Store
	log *slog.Logger
	mux *http.ServeMux
	// wakes wakes the open event streams when the store changes.
	wakes *wakes
}

// route is one route of the API: what the OpenAPI document describes and
// the test holds against it.
type route struct {
	method, pattern string
	serve           func(h *Handler, c *call) error
}

// routes is every route the Handler serves.
var routes = []route{
	{"GET", "/api/v1/openapi.json", nil},
	{"GET", "/api/v1/agent", (*Handler).whoAmI},
	{"GET", "/api/v1/agent/system-context", (*Handler).systemContext},
	{"GET", "/api/v1/tasks", (*Handler).listTasks},
	{"POST", "/api/v1/tasks", (*Handler).createTask},
	{"GET", "/api/v1/tasks/{task}", (*Handler).getTask},
	{"GET", "/api/v1/tasks/{task}/plan", (*Handler).getPlan},
	{"POST", "/api/v1/tasks/{task}/plan", (*Handler).writePlan},
	{"POST", "/api/v1/tasks/{task}/plan/amendments", (*Handler).amendPlan},
	{"POST", "/api/v1/tasks/{task}/claims", (*Handler).claim},
	{"GET", "/api/v1/tasks/{task}/outputs/{subtask}", (*Handler).getOutput},
	{"PUT", "/api/v1/tasks/{task}/outputs/{subtask}", (*Handler).writeOutput},
	{"GET", "/api/v1/tasks/{task}/reviews/{review}", (*Handler).getReview},
	{"PUT", "/api/v1/tasks/{task}/reviews/{review}", (*Handler).writeReview},
	{"POST", "/api/v1/tasks/{task}/done", (*Handler).done},
	{"GET", "/api/v1/tasks/{task}/events", (*Handler).events},
	{"GET", "/api/v1/tasks/{task}/env", (*Handler).listEntries},
	{"GET", "/api/v1/tasks/{task}/env/{key}", (*Handler).getEntry},
	{"PUT", "/api/v1/tasks/{task}/env/{key}", (*Handler).putEntry},
	{"DELETE", "/api/v1/tasks/{task}/env/{key}", (*Handler).deleteEntry},
	{"GET", "/api/v1/tasks/{task}/threads", (*Handler).listThreads},
	{"POST", "/api/v1/tasks/{task}/threads", (*Handler).newThread},
	{"GET", "/api/v1/tasks/{task}/threads/{thread}", (*Handler).getThread},
	{"PATCH", "/api/v1/tasks/{task}/threads/{thread}", (*Handler).updateThread},
	{"GET", "/api/v1/tasks/{task}/threads/{thread}/session", (*Handler).listEntries},
	{"GET", "/api/v1/tasks/{task}/threads/{thread}/session/{key}", (*Handler).getEntry},
	{"PUT", "/api/v1/tasks/{task}/threads/{thread}/session/{key}", (*Handler).putEntry},
	{"DELETE", "/api/v1/tasks/{task}/threads/{thread}/session/{key}", (*Handler).deleteEntry},
	{"GET", "/api/v1/memory/global", (*Handler).listEntries},
	{"GET", "/api/v1/memory/global/{key}", (*Handler).getEntry},
	{"PUT", "/api/v1/memory/global/{key}", (*Handler).putEntry},
	{"DELETE", "/api/v1/memory/global/{key}", (*Handler).deleteEntry},
	{"GET", "/api/v1/memory/agents/{agent}", (*Handler).listEntries},
	{"GET", "/api/v1/memory/agents/{agent}/{key}", (*Handler).getEntry},
	{"GET", "/api/v1/memory/global/{key}/history", (*Handler).entryHistory},
	{"GET", "/api/v1/memory/agents/{agent}/{key}/history", (*Handler).entryHistory},
	{"PUT", "/api/v1/memory/agents/{agent}/{key}", (*Handler).putEntry},
	{"DELETE", "/api/v1/memory/agents/{agent}/{key}", (*Handler).deleteEntry},
	{"GET", "/api/v1/memory/items", (*Handler).getItem},
	{"PUT", "/api/v1/memory/items", (*Handler).putItem},
	{"DELETE", "/api/v1/memory/items", (*Handler).deleteItem},
	{"POST", "/api/v1/memory/batch", (*Handler).putItems},
	{"GET", "/api/v1/memory/events", (*Handler).memoryEvents},
	{"POST", "/api/v1/memory/search", (*Handler).searchItems},
	{"POST", "/api/v1/memory/namespaces", (*Handler).namespaces},
	{"GET", "/api/v1/threads/{thread}/context", (*Handler).context},
	{"GET", "/api/v1/threads/{thread}/preamble", (*Handler).preamble},
}

// guardedRoutes are the routes whose one operation a store may check a
// grant guard in (workspace.GrantGuarding), by the operation: on a store
// that does, a token's request there is admitted on its remembered grant
// without a look-up (wrap).
var guardedRoutes = map[string]string{
	"GET /api/v1/memory/items":  workspace.GuardedMemoryGet,
	"PUT /api/v1/memory/items":  workspace.GuardedMemoryPut,
	"POST /api/v1/memory/batch": workspace.GuardedMemoryBatch,
}

// New builds the Handler over cfg.Store behind cfg.Gate.
func New(cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = int64(cfg.Store.Settings().Limits.ValueMaxBytes) + bodySlack
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &Handler{cfg: cfg, st: cfg.Store, log: cfg.Log, mux: http.NewServeMux(), wakes: &wakes{warn: cfg.Log.Warn}}
	if w, ok := workspace.As[workspace.Watcher](cfg.Store); ok {
		h.wakes.w = w
	}
	h.mux.HandleFunc("GET /api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(Document)
	})
	for _, rt := range routes {
		if rt.serve == nil {
			continue
		}
		op, ok := guardedRoutes[rt.method+" "+rt.pattern]
		h.mux.HandleFunc(rt.method+" "+rt.pattern, h.wrap(rt.serve, ok && service.GuardsGrant(cfg.Store, op)))
	}
	h.mux.HandleFunc("/", h.noRoute)
	return h
}

// ServeHTTP serves one request of the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// methods are the methods the API knows.
var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// noRoute answers a request no route takes: 501 for a method the API
// does not know at all (RFC 9110), 405 with Allow when the path is a
// route's under other methods, else 404.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(methods, r.Method) && r.Method != http.MethodHead {
		writeProblem(w, r, &apiError{status: http.StatusNotImplemented, kind: kindNotImplemented,
			msg: r.Method + " is not a method of this API", hint: "use " + strings.Join(methods, ", ") + "; GET /api/v1/openapi.json lists every route with its methods"})
		return
	}
	var allow []string
	for _, m := range methods {
		if _, p := h.mux.Handler(&http.Request{Method: m, URL: r.URL, Host: r.Host}); p != "/" && p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, r, &apiError{status: http.StatusMethodNotAllowed, kind: kindMethod,
			msg: r.Method + " is not a method of " + r.URL.Path, hint: "use " + strings.Join(allow, " or ") + "; GET /api/v1/openapi.json lists every route with its methods"})
		return
	}
	writeProblem(w, r, &apiError{status: http.StatusNotFound, kind: kindNotFound,
		msg: "no such route: " + r.Method + " " + r.URL.Path, hint: "GET /api/v1/openapi.json lists every route"})
}
