package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/tokens"
)

// Observer is told what the HTTP server does, for its metrics. Its
// methods are called from the requests' goroutines: an Observer is safe
// for concurrent use.
type Observer interface {
	// ToolCalled: a tool was called (its registered name) with outcome
	// OutcomeOK or OutcomeError.
	ToolCalled(tool, outcome string)
	// Refused: a request or a session was refused, for one of the
	// Refusal… reasons.
	Refused(reason string)
}

// A tool call's outcome.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error" // the tool answered an error (IsError)
)

// Why the HTTP server refused a request or a session.
const (
	RefusalBodyTooLarge    = "body_too_large"
	RefusalNoToken         = "no_token"
	RefusalUnknownToken    = "unknown_token"
	RefusalExpiredToken    = "expired_token"
	RefusalAgentsFile      = "agents_file_untrusted"
	RefusalOtherAgent      = "other_agent"
	RefusalTaskNotGranted  = "task_not_granted"
	RefusalTooManySessions = "too_many_sessions"
	RefusalTokenSessions   = "token_sessions"
	RefusalNotFound        = "not_found"
	RefusalInvalid         = "invalid"
	RefusalInvalidOAuth    = "invalid_oauth_token" // an access token refused: signature, issuer, expiry, audience
	RefusalOAuthNoGrant    = "oauth_no_grant"      // a valid access token whose claims grant nothing here
)

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) ToolCalled(string, string) {}
func (nopObserver) Refused(string)            {}

// called tells the host's observer of a call of tool.
func (h *host) called(tool string, failed bool) {
	if h.obs == nil {
		return
	}
	if failed {
		h.obs.ToolCalled(tool, OutcomeError)
	} else {
		h.obs.ToolCalled(tool, OutcomeOK)
	}
}

// record puts a call of tool in the audit: the session's agent, task and
// thread, the id of the token the call carried (the session's own on
// stdio), the client's address, what the arguments name and how it ended.
func (s *Server) record(ctx context.Context, extra *mcp.RequestExtra, tool string, args json.RawMessage, outcome string, err error) {
	if s.audit == nil {
		return
	}
	r := audit.Record{Door: audit.DoorMCP, Action: tool, Outcome: outcome, Agent: s.agent, Token: s.tokenID, From: s.remote,
		Task: s.task, Thread: s.thread, Target: audit.TargetOf(argsOf(ctx, args).top)}
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		r.Token = extra.TokenInfo.UserID
	}
	if err != nil {
		r.Reason = ErrorText(err)
	}
	s.audit.Record(ctx, r)
}

// refusedAudit records a request the HTTP server refused in the audit.
func (h *HTTP) refusedAudit(r *http.Request, agent, token, reason string) {
	h.opt.Audit.Record(r.Context(), audit.Record{Door: audit.DoorMCP, Action: "request " + r.Method, Outcome: audit.Refused,
		Agent: agent, Token: token, From: r.RemoteAddr, Reason: reason})
}

// refused counts, logs and audits a token the look-up refused, and says
// why as the bearer check answers it (401, or 500 for grants that
// cannot be trusted).
func (h *HTTP) refused(r *http.Request, err error) error {
	switch {
	case errors.Is(err, httpauth.ErrUnknownToken):
		h.log.Warn("mcp http: request refused", "agent", "-", "remote", r.RemoteAddr, "reason", "unknown or revoked token")
		h.opt.Observer.Refused(RefusalUnknownToken)
		h.refusedAudit(r, "", "", "unknown or revoked token")
		return fmt.Errorf("%w: unknown or revoked token", auth.ErrInvalidToken)
	case errors.Is(err, tokens.ErrExpired):
		h.log.Warn("mcp http: request refused", "agent", "-", "remote", r.RemoteAddr, "reason", err.Error())
		h.opt.Observer.Refused(RefusalExpiredToken)
		h.refusedAudit(r, "", "", err.Error())
		return fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	h.log.Error("mcp http: request refused: the agents file cannot be trusted", "remote", r.RemoteAddr, "reason", err.Error())
	h.opt.Observer.Refused(RefusalAgentsFile)
	return errors.New("the server's agents file cannot be trusted: its operator sees why in the log")
}
