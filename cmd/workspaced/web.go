package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/web"
	"github.com/workspaced/workspaced/workspace"
)

const webUsage = `workspaced web — serve the live panel and the HTTP API of a workspace.

Usage:
  workspaced web [--listen ADDR] [--token-file FILE] [--behind-tls-proxy]
                 [--session-ttl DURATION] [--audit-log FILE] [--read-only]
                 [--oauth-resource URL [--oauth-issuer URL]]
                 [--rate N] [--burst N] [--address-rate N] [--address-burst N]
                 [--streams-per-token N] [--sessions-per-token N]
                 [--trust-origin ORIGIN]... [--trust-proxy ADDR]...

Serves, on one listener, pages a person watches the workspace on — every
task with its status and progress; a task's board or dependency graph,
checkpoints, workers, plan versions with a diff, outputs, reviews, threads,
env data, journal and backups; its timeline of events, live; the memory;
the friction log — and the JSON API other programs read (docs/HTTP.md).
Pages update as the tree changes (the server watches it), and a reloaded
or reconnected page resumes its timeline without losing or repeating an
event. Everything is embedded in the binary: no build step, no network.

A person can step in from the pages: approve or send back a plan, review a
checkpoint, answer an escalation, cancel a task, resolve a friction entry.
Each action goes through the protocol as agent "human" (a review file and
a done marker, a cancel marker, the friction log under its lock); the
daemon (workspaced serve) applies the markers. --read-only turns them off.

It listens on --listen, 127.0.0.1:7070 by default, and prints its address.
Without --token-file, on a loopback address, any process of this machine
may read every task and act from the panel: it says so at start. With
--token-file FILE (needed off loopback, offered on loopback too) every
request must carry the secret FILE holds, as "Authorization: Bearer
<token>", or log in at /login: with that secret (user "operator") or with
a token of 'workspaced token add --may panel' (user: its agent). FILE must
be readable by its owner alone (chmod 600) and hold at least 128 bits of
randomness ('openssl rand -hex 32'); the panel refuses to start otherwise.
A login opens a session whose random id — never the secret — is the
cookie; it lasts --session-ttl (12h), ends at "Log out", and, for a
token's login, when the token is revoked, expires or is rotated. After 5
wrong tokens from one address, one more attempt a minute is checked and
the others are answered 429 (workspaced_web_logins_total counts them).
Actions are POSTs that must carry the page's CSRF token and come from a
page of the panel's own origin. Put the panel behind a TLS proxy to reach it from another machine, with
--behind-tls-proxy so that its cookies are sent over TLS only.

Every login, logout and action goes to the audit with the person's
identity and address (the protocol records the agent "human"): to stderr
as lines "msg=audit", or with --audit-log FILE as JSON lines appended to
FILE (created mode 0600, rotated past workspace.json's
audit.max_megabytes, default 100, keeping audit.keep rotated files,
default 10).

/healthz, /readyz and /metrics are served there too; /metrics wants the
token when there is one.

` + guardUsage + `

On a loopback address the same listener serves the HTTP API for programs
at /api/v1/ (docs/API.md; its document at /api/v1/openapi.json): each
request with a bearer token of 'workspaced token add', or, without
--token-file, none and the agent named in the Workspace-Agent header
(default cli). With --oauth-resource URL (the panel's canonical URL) the
API and /mcp also accept the OAuth access tokens issued for it by
--oauth-issuer (default workspace.json's oauth.issuer), as mcp --http
does, its metadata is served at /.well-known/oauth-protected-resource,
and no API request is trusted for its address.

On a loopback address the same listener serves the MCP tools to remote
agents at /mcp, over Streamable HTTP, each request with a bearer token of
'workspaced token add' (docs/MCP.md); the panel's token and CSRF checks do
not apply there. Off loopback /mcp is not served (the panel has no TLS of
its own): use 'workspaced mcp --http ADDR --tls-cert F --tls-key F'.

Examples:
  workspaced web
  workspaced web --listen 127.0.0.1:8080 --read-only
  (umask 077; openssl rand -hex 32 > ~/.workspaced-token) && workspaced web --token-file ~/.workspaced-token
  workspaced web --listen 127.0.0.1:7070 --token-file ~/.workspaced-token --behind-tls-proxy

Exit codes: 0 stopped by SIGINT or SIGTERM, 1 failure (the address is
taken, the token file unreadable, empty, weak or readable by others), 2
usage (a non-loopback --listen without --token-file), 3 no workspace.
`

func cmdWeb(ctx context.Context, e *env, args []string) error {
	fs := newFlags("web")
	listen := fs.String("listen", web.DefaultListen, "listen on `ADDR` (host:port)")
	tokenFile := fs.String("token-file", "", "require the token held in `FILE` (needed off loopback)")
	readOnly := fs.Bool("read-only", false, "turn every action off")
	proxied := fs.Bool("behind-tls-proxy", false, "the panel is reached through a proxy that terminates TLS: cookies are Secure")
	sessionTTL := fs.Duration("session-ttl", web.DefaultSessionTTL, "how long a login lasts (`DURATION`)")
	auditFile := fs.String("audit-log", "", "append the audit to `FILE` as JSON lines (default: stderr)")
	issuer := fs.String("oauth-issuer", "", "with --oauth-resource, accept the access tokens of the OAuth issuer `URL` on the API and /mcp (default: workspace.json's oauth.issuer)")
	resource := fs.String("oauth-resource", "", "accept OAuth access tokens issued for `URL`, this panel's canonical URL, on its API and /mcp")
	gf := addGuardFlags(fs, true)
	if err := parse(e, fs, webUsage, args); err != nil {
		return err
	}
	if err := gf.check("web"); err != nil {
		return err
	}
	if *sessionTTL <= 0 {
		return usageHint("web", "--session-ttl must be positive")
	}
	if fs.NArg() > 0 {
		return usageHint("web", "unexpected argument %q", fs.Arg(0))
	}
	token := ""
	if *tokenFile != "" {
		t, err := web.ReadTokenFile(*tokenFile)
		if err != nil {
			return err
		}
		token = t
	}
	if err := web.CheckListen(*listen, token != ""); err != nil {
		var we *workspace.Error
		if errors.As(err, &we) {
			return &usageError{msg: "web: " + err.Error(), hint: "give --token-file FILE (a long random secret, e.g. 'openssl rand -hex 32 > FILE'), or --listen 127.0.0.1:PORT"}
		}
		return usageHint("web", "--listen: %v", err)
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := service.Watched(st); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	a, err := auditLog(*auditFile, st.Settings().Audit, log)
	if err != nil {
		return err
	}
	defer a.Close()
	reg := opshttp.NewRegistry()
	var (
		h *mcpserver.HTTP
		s *web.Server
	)
	v, err := listenerOAuth(ctx, "web", st.Settings().OAuth, *issuer, *resource)
	if err != nil {
		return err
	}
	// The tokens of this listener: the agents', OAuth's, the panel's.
	gd, gm, err := gf.newGuard("web", st.Settings().HTTP, reg, log, anyWho(keeperWho(st), oauthWho(v), func(r *http.Request) (string, bool) { return s.Who(r) }))
	if err != nil {
		return err
	}
	cfg := web.Config{Store: st, Token: token, ReadOnly: *readOnly, BehindTLSProxy: *proxied, SessionTTL: *sessionTTL, Audit: a,
		Logins: opsmetrics.NewLogins(reg, web.LoginOK, web.LoginFailed, web.LoginThrottled)}
	// The agents' tokens: the tree's agents file, or the database's table.
	toks, toksErr := tokenKeeper("serve MCP at /mcp", st)
	if toksErr == nil {
		cfg.Grants = toks
	}
	if host, _, _ := net.SplitHostPort(*listen); loopback(host) && toksErr == nil {
		// Remote agents' MCP tools ride on the same listener. Off
		// loopback the panel has no TLS of its own, and bearer tokens
		// must not cross the network in the clear: there
		// 'workspaced mcp --http' with --tls-cert serves them.
		if _, err := toks.List(ctx); err != nil {
			return err
		}
		obs := mcpObserver{mcpMetrics(reg, &h), gm}
		h, err = mcpserver.NewHTTP(st, toks, mcpserver.HTTPOptions{Version: versionString(), Log: log, Observer: obs, Audit: a,
			SessionsPerToken: gd.Limits().Sessions, OAuth: v})
		if err != nil {
			return err
		}
		defer h.Close()
		cfg.MCP = h
	}
	if host, _, _ := net.SplitHostPort(*listen); loopback(host) {
		// The HTTP API for programs, on loopback only, as /mcp: the
		// panel has no TLS of its own. Without a token file the
		// listener trusts its machine: a request without a token acts
		// as the agent it names.
		var done func()
		// With OAuth no request is trusted for its address: a client
		// without a token must get the 401 that names the metadata.
		cfg.API, done = apiHandler(st, token == "" && v == nil, slog.New(slog.NewTextHandler(e.stderr, nil)), v)
		defer done()
	}
	cfg.ClientOf = gd.Client
	s, err = web.New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: webHandler(reg, s, gd, st, token, v), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	watchErr := make(chan error, 1)
	go func() { watchErr <- s.Run(ctx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case <-s.Ready():
	case err := <-watchErr:
		srv.Close()
		if err == nil {
			return nil // stopped before it was ready
		}
		return fmt.Errorf("watch the workspace: %w", err)
	}
	fmt.Fprintf(e.stdout, "http://%s/\n", ln.Addr())
	if token == "" {
		fmt.Fprintf(e.stderr, "workspaced web: no --token-file: any process on this machine may read every task and every agent's memory and act from the panel; give --token-file FILE to ask for a login\n")
	}
	if cfg.API != nil {
		fmt.Fprintf(e.stderr, "workspaced web: the HTTP API at http://%s/api/v1/ (docs/API.md)\n", ln.Addr())
	}
	if v != nil {
		sayOAuth(e, "web", v)
	}
	switch {
	case cfg.MCP != nil:
		fmt.Fprintf(e.stderr, "workspaced web: MCP for remote agents at http://%s/mcp (bearer tokens of 'workspaced token add')\n", ln.Addr())
	case toksErr != nil:
		fmt.Fprintf(e.stderr, "workspaced web: no MCP at /mcp: this store keeps no agents' tokens\n")
	default:
		fmt.Fprintf(e.stderr, "workspaced web: no MCP at /mcp off loopback without TLS; serve it with 'workspaced mcp --http ADDR --tls-cert F --tls-key F'\n")
	}
	select {
	case <-ctx.Done():
	case err := <-watchErr:
		if err != nil {
			srv.Close()
			return fmt.Errorf("watch the workspace: %w", err)
		}
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	cancel()
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shut)
	return nil
}
