package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/api"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// The HTTP API for programs (package api) rides on the listeners of web,
// mcp --http and serve --listen, under each one's rules: served where
// bearer tokens do not cross the network in the clear (a loopback
// address, or TLS), admitting agents by their tokens of 'workspaced token
// add'; a listener on loopback with no token file and no TLS trusts its
// machine, as the command line does, and a request without a token acts
// as the agent its Workspace-Agent header names (default cli).

// apiHandler is the API over st behind a gate: st's agents' tokens (none
// when it keeps none), their uses written and their streams ended with
// them, with trust the loopback's trust, and with v OAuth access tokens. The caller calls done once
// the listener stops (the last uses are written then).
func apiHandler(st workspace.Store, trust bool, log *slog.Logger, v *oauth.Verifier) (h http.Handler, done func()) {
	gate := &httpauth.Gate{TrustLoopback: trust, OAuth: v}
	done = func() {}
	if k, err := tokenKeeper("serve the HTTP API", st); err == nil {
		gate.Keeper, gate.Watch = k, tokens.NewWatch(k, 0, log)
		done = gate.Watch.Close
	}
	return api.New(api.Config{Store: st, Gate: gate, Log: log}), done
}

// withMetadata serves v's Protected Resource Metadata (RFC 9728) at its
// well-known paths beside next; next alone when v is nil. Only those
// paths go to the metadata: every other request reaches next as it came.
func withMetadata(v *oauth.Verifier, next http.Handler) http.Handler {
	if v == nil {
		return next
	}
	mux := http.NewServeMux()
	v.Mount(mux)
	paths := v.Config().MetadataPaths()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(paths, r.URL.Path) {
			mux.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// oauthWho names a request by the OAuth access token it carries, for
// the listener's limits (nil without OAuth): a token v accepts counts as
// its subject's, not as its address's.
func oauthWho(v *oauth.Verifier) func(*http.Request) (string, bool) {
	if v == nil {
		return nil
	}
	return func(r *http.Request) (string, bool) {
		t, ok := httpauth.Bearer(r)
		if !ok || strings.HasPrefix(t, tokens.Prefix) {
			return "", false
		}
		a, err := v.Verify(r.Context(), t)
		if err != nil {
			return "", false
		}
		return a.Grant.ID(), true
	}
}

// sayOAuth tells, at start, that a listener is an OAuth resource server.
func sayOAuth(e *env, cmd string, v *oauth.Verifier) {
	oc := v.Config()
	fmt.Fprintf(e.stderr, "workspaced %s: OAuth resource server for %s: access tokens of %s accepted, metadata at %s\n", cmd, oc.Resource, oc.Issuer, oc.MetadataURL())
}

// listenerOAuth is the OAuth mode of serve --listen's or web's HTTP API:
// on only with --oauth-resource, this listener's own canonical URL (the
// audience its tokens must name, not mcp --http's), with the issuer of
// --oauth-issuer or workspace.json's oauth.issuer and its claims mapping,
// so that one authorization server's tokens reach every listener.
func listenerOAuth(ctx context.Context, cmd string, s workspace.OAuthSettings, issuer, resource string) (*oauth.Verifier, error) {
	if resource == "" {
		if issuer != "" {
			return nil, usageHint(cmd, "--oauth-issuer goes with --oauth-resource URL, this listener's canonical URL (the audience of its tokens)")
		}
		return nil, nil
	}
	return oauthVerifier(ctx, cmd, s, issuer, resource)
}
