package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/opshttp"
	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/web"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// The operations endpoints of serve --listen: /healthz, /readyz and
// /metrics (internal/opshttp), on a listener of their own, under the
// panel's rule: a loopback address, unless a token or TLS guards it.

// opsFlags are serve's flags for its endpoints.
type opsFlags struct {
	listen, tokenFile, cert, key *string
	issuer, resource             *string
	guard                        *guardFlags
}

func addOpsFlags(fs *flag.FlagSet) *opsFlags {
	return &opsFlags{
		listen:    fs.String("listen", "", "serve /healthz, /readyz and /metrics on `ADDR` (host:port; off when empty)"),
		tokenFile: fs.String("token-file", "", "with --listen, require the token held in `FILE` for /metrics (needed off loopback)"),
		cert:      fs.String("tls-cert", "", "with --listen, the TLS certificate `F` (PEM)"),
		key:       fs.String("tls-key", "", "with --listen, the TLS key `F` (PEM)"),
		issuer:    fs.String("oauth-issuer", "", "with --oauth-resource, accept the access tokens of the OAuth issuer `URL` on the API (default: workspace.json's oauth.issuer)"),
		resource:  fs.String("oauth-resource", "", "with --listen, accept OAuth access tokens on the API issued for `URL`, this listener's canonical URL"),
		guard:     addGuardFlags(fs, false),
	}
}

// check refuses a non-loopback address without a token: /metrics is
// behind a token off loopback, TLS or not (TLS hides the token on the
// way; it does not say who may read). It returns the token.
func (o *opsFlags) check() (string, error) {
	if err := o.guard.check("serve"); err != nil {
		return "", err
	}
	if *o.listen == "" {
		if *o.tokenFile != "" || *o.cert != "" || *o.key != "" || *o.issuer != "" || *o.resource != "" {
			return "", usageHint("serve", "--token-file, --tls-cert, --tls-key, --oauth-issuer and --oauth-resource go with --listen")
		}
		return "", nil
	}
	if (*o.cert == "") != (*o.key == "") {
		return "", usageHint("serve", "--tls-cert and --tls-key go together")
	}
	token, err := readTokenFile(*o.tokenFile, randomSecret)
	if err != nil {
		return "", err
	}
	if err := web.CheckListen(*o.listen, token != ""); err != nil {
		var we *workspace.Error
		if errors.As(err, &we) {
			return "", &usageError{msg: "serve: --listen " + *o.listen + ": not a loopback address, and no token: anyone who reaches the port could read /metrics",
				hint: "give --token-file FILE (with --tls-cert and --tls-key off this machine), or --listen 127.0.0.1:PORT"}
		}
		return "", usageHint("serve", "--listen: %v", err)
	}
	return token, nil
}

// randomSecret says how to fill a token file the operator makes.
const randomSecret = "put a long random secret in it, e.g. 'openssl rand -hex 32 > FILE'"

// readTokenFile reads a token file ("" when none is named); hint says how
// to mend an empty one.
func readTokenFile(path, hint string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "read the token file " + path, Msg: "it is empty",
			Hint: hint}
	}
	return token, nil
}

// serveOps listens on o's address and serves h there until ctx is done;
// the returned function waits for it to stop. The address is logged as a
// URL (url=http://127.0.0.1:PORT/ with port 0 made real).
func serveOps(ctx context.Context, o *opsFlags, h http.Handler, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", *o.listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", *o.listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if *o.cert != "" {
		scheme = "https"
	}
	log.Info("operations endpoints", "url", fmt.Sprintf("%s://%s/", scheme, ln.Addr()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if *o.cert != "" {
			err = srv.ServeTLS(ln, *o.cert, *o.key)
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("operations endpoints", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return func() { <-done }, nil
}

// runDaemon runs the daemon of cfg with its metrics, the notify protocol
// and, with --listen, the operations endpoints and, where bearer tokens
// stay off the network in the clear (loopback or TLS), the HTTP API over
// st.
func runDaemon(ctx context.Context, cfg daemon.Config, ops *opsFlags, token string, st workspace.Store) error {
	reg := opshttp.NewRegistry()
	var d *daemon.Daemon
	m := opsmetrics.NewDaemon(reg, func() workspace.Live { return d.Live() }, cfg.Store)
	n := &notifier{m: m, log: cfg.Logger}
	cfg.Observer = m
	ready := cfg.Ready
	cfg.Ready = func() {
		if ready != nil {
			ready()
		}
		m.Ready()
		n.ready()
	}
	cfg.Lead.Waiting = func() {
		m.Standby()
		n.ready()
	}
	d, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	n.d = d
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *ops.listen != "" {
		var h http.Handler = opshttp.Handler(opshttp.Options{Registry: reg, Token: token,
			Ready: func(context.Context) error { return m.Readiness() }})
		v, err := listenerOAuth(ctx, "serve", st.Settings().OAuth, *ops.issuer, *ops.resource)
		if err != nil {
			return err
		}
		host, _, _ := net.SplitHostPort(*ops.listen)
		if tls := *ops.cert != ""; tls || loopback(host) {
			// With OAuth no request is trusted for its address: a client
			// without a token must get the 401 that names the metadata.
			apiH, done := apiHandler(st, !tls && token == "" && loopback(host) && v == nil, cfg.Logger, v)
			defer done()
			h = opshttp.Route(h, withMetadata(v, apiH))
			if v != nil {
				oc := v.Config()
				cfg.Logger.Info("OAuth resource server", "resource", oc.Resource, "issuer", oc.Issuer, "metadata", oc.MetadataURL())
			}
		}
		// The tokens of this listener: the metrics token, the agents',
		// OAuth's.
		who := anyWho(secretWho("metrics", token), keeperWho(st), oauthWho(v))
		gd, _, err := ops.guard.newGuard("serve", st.Settings().HTTP, reg, cfg.Logger, who)
		if err != nil {
			return err
		}
		wait, err := serveOps(ctx, ops, httpauth.Once(gd.Wrap(h)), cfg.Logger)
		if err != nil {
			return err
		}
		defer wait()
	}
	n.run(ctx)
	defer n.wait()
	defer cancel() // STOPPING=1 also when Run fails
	return d.Run(ctx)
}
