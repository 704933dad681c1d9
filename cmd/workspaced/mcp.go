package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/api"
	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

const mcpUsage = `workspaced mcp — serve the workspace to agents over the Model Context
Protocol: to one agent on stdin/stdout (newline-delimited JSON-RPC), or to
remote agents over Streamable HTTP (--http). An MCP client (an LLM agent
runtime) gets the universal capabilities as tools — env data:
store_env_data, get_env_data, list_env_data, update_env_data,
delete_env_data; memory: store_memory, get_memory, list_memory,
delete_memory, get_memory_history; namespaced memory: put_memory_item, get_memory_item,
delete_memory_item, search_memory, list_memory_namespaces; the task's work: get_task, get_task_state, get_plan,
get_subtask, get_output, list_reviews, get_review, write_plan, amend_plan, write_review,
claim_subtask, signal_done; context: get_delegation_context,
list_capabilities, skills, get_context; the workspace: list_tasks,
create_task — and the task's state and env manifest as
resources (workspace://tasks/T/state, workspace://tasks/T/env).

Usage:
  workspaced [--root DIR] mcp [--task T] [--thread X] --agent A [--audit-log F]
  workspaced [--root DIR] mcp [--task T] [--thread X] --token-file F [--audit-log F]
  workspaced [--root DIR] mcp --http ADDR [--tls-cert F --tls-key F | --insecure]
                              [--max-sessions N] [--idle-timeout DUR] [--audit-log F]
                              [--metrics-token-file F]
                              [--oauth-issuer URL --oauth-resource URL]
                              [--rate N] [--burst N] [--address-rate N] [--address-burst N]
                              [--streams-per-token N] [--sessions-per-token N]
                              [--trust-origin ORIGIN]... [--trust-proxy ADDR]...

Without --task and --thread the server serves every task the agent may
reach (with a token, those it covers; a token for one task serves that
task): list_tasks and create_task, and each task tool takes the task (or
thread) as an argument; get_context is the budgeted context. On stdio,
--thread alone finds its task; --task alone serves the task's root thread. --agent (or $WORKSPACE_AGENT) is the serving agent: stored_by of
every entry, the owner of the agent memory scope, the agent of every marker
it drops. With --token-file F (or $WORKSPACE_TOKEN) the agent is the token's
(an --agent naming another is refused) and every call is checked against
what the token may do, as over HTTP.

With --http the server listens on ADDR (host:port) and serves /mcp to many
agents at once. Every request carries a token of 'workspaced token add' as
"Authorization: Bearer TOKEN"; the token names the agent. A session may name
its task and thread in the URL (/mcp?task=T&thread=X) or in the headers
Workspace-Task and Workspace-Thread; without them it serves every task its
token covers, each call naming its task.
The same listener serves the HTTP API for programs at /api/v1/ (docs/API.md),
each request with a bearer token of 'workspaced token add'.
ADDR must be a loopback address unless --tls-cert and --tls-key are given
(HTTPS), or --insecure says plain HTTP off this machine is meant. The same
listener serves /healthz, /readyz and /metrics; off loopback /metrics wants
an agent's token or the one in --metrics-token-file.

` + guardUsage + `

With an OAuth issuer (--oauth-issuer, or "oauth" in workspace.json) the
server is also an OAuth resource server, for clients that connect only by
OAuth: it publishes its Protected Resource Metadata at
/.well-known/oauth-protected-resource, names it in every 401, and accepts
the access tokens (JWT) the issuer signs for --oauth-resource (this
server's URL as clients reach it), the agent and its rights taken from the
token's claims as workspace.json maps them (docs/MCP.md). The tokens of
'workspaced token add' keep working beside them.

The ids are checked before serving; nothing is read from stdin until then.
Log lines go to stderr (on HTTP: every refusal, with the agent and the
reason); stdout carries only the protocol. The audit — a record of every
tool call and every refusal: the tool, the agent, the token's id (never
the token), the client's address, what it named and how it ended — goes on
HTTP to stderr as lines "msg=audit", or with --audit-log F as JSON lines
appended to F (created mode 0600; a file others may read is refused;
rotated past workspace.json's audit.max_megabytes, default 100, keeping
audit.keep rotated files, default 10). Plans, reviews, claims and done
reports are applied to the task's state by the daemon (workspaced serve):
run one on the same root. The server runs Go's garbage collector as GOGC=400
(less CPU a tool call) under a soft memory limit of 64 MiB, or twice its
live heap once the store is open when that is more; GOGC or GOMEMLIMIT in
the environment wins.

Examples:
  workspaced --root ./workspace mcp --agent observer
  workspaced --root ./workspace mcp --task t1 --thread th_observer --agent observer
  workspaced mcp --thread th_solver --agent solver
  workspaced mcp --task t1 --token-file ~/.config/worker_1.token
  workspaced mcp --http 127.0.0.1:8765
  workspaced mcp --http 0.0.0.0:443 --tls-cert cert.pem --tls-key key.pem --max-sessions 64
  workspaced mcp --http 127.0.0.1:8765 --oauth-issuer https://auth.example.com/realms/agents \
      --oauth-resource https://mcp.example.com/mcp

Exit codes: 0 the client disconnected (or SIGINT/SIGTERM), 1 failure (a bad
id, an unknown or revoked token, a token for another agent or task, a
listen address refused), 2 usage, 3 task or thread not found.
`

func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags("mcp")
	task := fs.String("task", "", "task `ID` (optional with --thread)")
	thread := fs.String("thread", "", "thread `ID` (default: the task's root thread)")
	agent := fs.String("agent", "", "the serving `AGENT` (default $WORKSPACE_AGENT)")
	tokenFile := fs.String("token-file", "", "on stdio, the file `F` holding the agent's token (default $WORKSPACE_TOKEN)")
	addr := fs.String("http", "", "serve Streamable HTTP on `ADDR` (host:port) at /mcp")
	cert := fs.String("tls-cert", "", "with --http, the TLS certificate `F` (PEM)")
	key := fs.String("tls-key", "", "with --http, the TLS key `F` (PEM)")
	insecure := fs.Bool("insecure", false, "with --http, allow plain HTTP on an address that is not loopback")
	maxSessions := fs.Int("max-sessions", mcpserver.DefaultMaxSessions, "with --http, the most sessions served at once")
	idle := fs.Duration("idle-timeout", mcpserver.DefaultIdleTimeout, "with --http, close a session unused this long")
	metricsToken := fs.String("metrics-token-file", "", "with --http, a token in `F` that may read /metrics besides the agents' tokens")
	auditLog := fs.String("audit-log", "", "append the audit to `F` as JSON lines (on HTTP: default stderr)")
	issuer := fs.String("oauth-issuer", "", "with --http, accept the access tokens of the OAuth issuer `URL` (default: workspace.json's oauth.issuer)")
	resource := fs.String("oauth-resource", "", "with --http and OAuth, this server's canonical `URL`, the audience of its tokens (default: oauth.resource)")
	gf := addGuardFlags(fs, true)
	if err := parse(e, fs, mcpUsage, args); err != nil {
		return err
	}
	tuneGC(mcpGCPercent)
	if *addr != "" {
		for _, f := range []string{"task", "thread", "agent", "token-file"} {
			if flagSet(fs, f) {
				return usageHint("mcp", "--%s is not used with --http: each request's token names the agent, each session its task and thread", f)
			}
		}
		if err := gf.check("mcp"); err != nil {
			return err
		}
		return serveMCPHTTP(ctx, e, httpConfig{addr: *addr, cert: *cert, key: *key, insecure: *insecure, maxSessions: *maxSessions, idle: *idle,
			issuer: *issuer, resource: *resource, audit: *auditLog, metricsToken: *metricsToken, guard: gf})
	}
	for _, f := range []string{"tls-cert", "tls-key", "insecure", "max-sessions", "idle-timeout", "oauth-issuer", "oauth-resource", "metrics-token-file",
		"rate", "burst", "address-rate", "address-burst", "streams-per-token", "sessions-per-token", "trust-origin", "trust-proxy"} {
		if flagSet(fs, f) {
			return usageHint("mcp", "--%s goes with --http ADDR", f)
		}
	}
	token, err := readToken(*tokenFile)
	if err != nil {
		return err
	}
	*agent = agentOr(*agent, "")
	if *agent == "" && token == "" {
		return usageHint("mcp", "missing --agent A (the agent this server acts for) or --token-file F")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	fitMemoryLimit(mcpMemLimit)
	opt := mcpserver.Options{TaskID: *task, ThreadID: *thread, Agent: *agent, Version: versionString(), Remote: "stdio"}
	if *auditLog != "" {
		a, err := audit.Open(*auditLog, auditRotation(w.Settings().Audit))
		if err != nil {
			return err
		}
		defer a.Close()
		opt.Audit = a
	}
	var (
		g      tokens.Grant
		keeper tokens.Keeper
	)
	if token != "" {
		var grants func(*mcp.RequestExtra) (tokens.Grant, error)
		g, keeper, grants, err = tokenGrants(w, token)
		if err != nil {
			return err
		}
		if *agent != "" && *agent != g.Agent {
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp", Msg: fmt.Sprintf("the token stands for agent %s, not %s", g.Agent, *agent),
				Hint: "leave --agent out: the token names the agent"}
		}
		opt.Agent, opt.Grants, opt.TokenID = g.Agent, grants, g.ID()
		if *task == "" && *thread == "" && len(g.Tasks) == 1 && g.Tasks[0] != tokens.AllTasks {
			opt.TaskID = g.Tasks[0] // a token for one task binds the session to it
		}
		opt.Log = slog.New(slog.NewTextHandler(e.stderr, nil))
	}
	s, err := mcpserver.New(w, opt)
	if err != nil {
		return err
	}
	if opt.Grants != nil && s.Task() != "" {
		if !g.Task(s.Task()) {
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp", Msg: fmt.Sprintf("agent %s may not work on task %s: its token covers %s", g.Agent, s.Task(), g.TaskList()),
				Hint: "serve a task the token covers, or add a token for this one ('workspaced token add')"}
		}
	}
	how := "on stdio"
	if token != "" {
		how = "on stdio, with a token"
	}
	serving := fmt.Sprintf("task %s, thread %s", s.Task(), s.Thread())
	if s.Task() == "" {
		serving = "every task the agent may reach"
	}
	fmt.Fprintf(e.stderr, "workspaced mcp: serving %s, as agent %s (root %s) %s\n", serving, s.Agent(), e.rootName(), how)
	if keeper == nil {
		return s.Run(ctx, &mcp.IOTransport{Reader: readCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
	}
	// The session lasts as long as its token: revoked, expired or rotated
	// past its overlap, the server ends within the watch's period instead
	// of refusing each call from then on.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := tokens.NewWatch(keeper, 0, opt.Log)
	defer watch.Close()
	var ended atomic.Bool
	defer watch.Hold(g.ID(), func() { ended.Store(true); cancel() })()
	err = s.Run(ctx, &mcp.IOTransport{Reader: readCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
	if ended.Load() {
		return tokenEnded(keeper, token)
	}
	return err
}

// tokenEnded is why a stdio session ended with its token: what the
// token's look-up says now, revoked or expired.
func tokenEnded(k tokens.Keeper, token string) error {
	_, err := k.Lookup(token)
	msg := "the token was revoked"
	if errors.Is(err, tokens.ErrExpired) {
		msg = "the token has ended: " + workspace.Reason(err)
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp", Msg: msg + "; the session is over",
		Hint: "start mcp again with a valid token (the one that replaced it, or a new one: 'workspaced token add')"}
}

// readToken is the token of --token-file F, else of $WORKSPACE_TOKEN, or
// "" for neither. The file holds the token alone (surrounding white space
// is dropped), so it never shows in a process listing.
func readToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv("WORKSPACE_TOKEN")), nil
	}
	return readTokenFile(file, "put in it the token 'workspaced token add' printed")
}

// tokenGrants looks the token up where the workspace keeps its tokens and
// returns its grant, the keeper, and the look-up every call makes again.
func tokenGrants(s workspace.Store, token string) (tokens.Grant, tokens.Keeper, func(*mcp.RequestExtra) (tokens.Grant, error), error) {
	store, err := tokenKeeper("mcp --token-file", s)
	if err != nil {
		return tokens.Grant{}, nil, nil, err
	}
	g, err := store.Lookup(token)
	if errors.Is(err, tokens.ErrUnknown) {
		return tokens.Grant{}, nil, nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp", Msg: "the token is unknown or revoked",
			Hint: "ask for a token ('workspaced token add'); 'workspaced token list' shows the ones there are"}
	}
	if errors.Is(err, tokens.ErrExpired) {
		return tokens.Grant{}, nil, nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp", Err: err,
			Hint: "ask for a new token ('workspaced token add', or 'workspaced token rotate' before a token ends)"}
	}
	if err != nil {
		return tokens.Grant{}, nil, nil, err
	}
	return g, store, func(*mcp.RequestExtra) (tokens.Grant, error) { return store.Lookup(token) }, nil
}

// httpConfig is what mcp --http was given.
type httpConfig struct {
	addr, cert, key string
	insecure        bool
	maxSessions     int
	idle            time.Duration
	audit           string // the audit log's file; "": the server's log
	// issuer and resource override workspace.json's oauth settings.
	issuer, resource string
	metricsToken     string // the file's name
	guard            *guardFlags
}

// serveMCPHTTP serves /mcp on the address until ctx is done.
func serveMCPHTTP(ctx context.Context, e *env, c httpConfig) error {
	if (c.cert == "") != (c.key == "") {
		return usageHint("mcp", "--tls-cert and --tls-key go together")
	}
	if c.maxSessions < 1 {
		return usageHint("mcp", "--max-sessions must be at least 1")
	}
	if c.idle <= 0 {
		return usageHint("mcp", "--idle-timeout must be positive")
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return usageHint("mcp", "--http %q is not host:port", c.addr)
	}
	tls := c.cert != ""
	if !loopback(host) && !tls && !c.insecure {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp --http " + c.addr,
			Msg:  "not a loopback address, and no TLS: tokens would cross the network in the clear",
			Hint: "give --tls-cert and --tls-key, listen on 127.0.0.1 behind a TLS proxy, or say --insecure if plain HTTP is meant"}
	}
	metricsToken, err := readTokenFile(c.metricsToken, randomSecret)
	if err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	fitMemoryLimit(mcpMemLimit)
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	toks, err := tokenKeeper("mcp --http", w)
	if err != nil {
		return err
	}
	// An agents file that cannot be trusted is said at once.
	if _, err := toks.List(ctx); err != nil {
		return err
	}
	verifier, err := oauthVerifier(ctx, "mcp", w.Settings().OAuth, c.issuer, c.resource)
	if err != nil {
		return err
	}
	reg := opshttp.NewRegistry()
	var h *mcpserver.HTTP
	who := func(r *http.Request) (string, bool) { return h.Who(r) }
	identify := func(r *http.Request) (string, bool) { return h.Identify(r) }
	gd, gm, err := c.guard.newGuard("mcp", w.Settings().HTTP, reg, log, anyWho(identify, secretWho("metrics", metricsToken)))
	if err != nil {
		return err
	}
	obs := mcpObserver{mcpMetrics(reg, &h), gm}
	a, err := auditLog(c.audit, w.Settings().Audit, log)
	if err != nil {
		return err
	}
	defer a.Close()
	h, err = mcpserver.NewHTTP(w, toks, mcpserver.HTTPOptions{Version: versionString(), MaxSessions: c.maxSessions, IdleTimeout: c.idle,
		SessionsPerToken: gd.Limits().Sessions, Log: log, Observer: obs, OAuth: verifier, Audit: a})
	if err != nil {
		return err
	}
	defer h.Close()
	// /metrics: open on loopback without a metrics token, else for an
	// agent's token or the metrics token.
	ops := opshttp.Options{Registry: reg, Token: metricsToken, Ready: opshttp.StoreReady(w)}
	if !loopback(host) || metricsToken != "" {
		ops.Allow = func(r *http.Request) bool { _, ok := who(r); return ok }
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	apiH, apiDone := apiHandler(w, false, log, verifier)
	defer apiDone()
	mux.Handle(api.Prefix, apiH)
	if verifier != nil {
		verifier.Mount(mux)
		sayOAuth(e, "mcp", verifier)
	}
	srv := &http.Server{Handler: httpauth.Once(gd.Wrap(opshttp.Route(opshttp.Handler(ops), mux))), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	fmt.Fprintf(e.stderr, "workspaced mcp: serving %s://%s/mcp and the HTTP API at %s://%s/api/v1/ (%s)\n", scheme, ln.Addr(), scheme, ln.Addr(), e.where(w))
	done := make(chan error, 1)
	go func() {
		if tls {
			done <- srv.ServeTLS(ln, c.cert, c.key)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", c.addr, err)
	case <-ctx.Done():
	}
	// Sessions hold streams open: give requests in flight a moment, then
	// close what is left.
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// A tool call allocates much and keeps little: the go-sdk decodes a call's
// message several times, each into a 32 KiB buffer of its own, so that an
// MCP server's heap is mostly the garbage of its last calls. As the daemon
// does, the server lets its heap grow further between collections than
// Go's default (up to five times the live heap, not twice), for less CPU
// a call, and once its store is open sets a soft memory limit that keeps
// its memory bounded: mcpMemLimit (a server's live heap is a few MiB, so
// the limit leaves room for many large values in flight), or twice the
// live heap when that is more (memLimitFor). GOGC or GOMEMLIMIT in the
// environment win.
const (
	mcpGCPercent = 400
	mcpMemLimit  = 64 << 20
)

// auditLog is the audit of a server: the file path as JSON lines,
// rotated as workspace.json's audit settings say, or, for "", the
// server's log.
func auditLog(path string, s workspace.AuditSettings, log *slog.Logger) (*audit.Log, error) {
	if path == "" {
		return audit.New(log), nil
	}
	return audit.Open(path, auditRotation(s))
}

// auditRotation is how workspace.json's audit settings rotate the file.
func auditRotation(s workspace.AuditSettings) audit.Rotation {
	return audit.Rotation{MaxMegabytes: s.MaxMegabytes, Keep: s.Keep}
}

// oauthVerifier is the OAuth mode of a listener (mcp --http, serve
// --listen, web): workspace.json's oauth settings with the flags issuer
// and resource over them, or nil when no issuer is set. The issuer's keys
// are looked up now, so that a wrong issuer is said at start.
func oauthVerifier(ctx context.Context, cmd string, s workspace.OAuthSettings, issuer, resource string) (*oauth.Verifier, error) {
	if issuer != "" {
		s.Issuer = issuer
	}
	if resource != "" {
		s.Resource = resource
	}
	cfg := oauth.Config{OAuthSettings: s}
	if !cfg.Enabled() {
		if resource != "" {
			return nil, usageHint(cmd, "--oauth-resource goes with an OAuth issuer: --oauth-issuer URL, or oauth.issuer in workspace.json")
		}
		return nil, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return oauth.New(dctx, cfg, nil)
}

// loopback reports whether host (of host:port) is this machine alone.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readCloser lets closing the transport close stdin when it is a file, so
// a stop on SIGINT does not wait for a read that never returns.
func readCloser(r io.Reader) io.ReadCloser {
	if f, ok := r.(*os.File); ok {
		return f
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
