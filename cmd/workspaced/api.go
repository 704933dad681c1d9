package main

import (
	"log/slog"
	"net/http"

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
