package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Actions: what a person does from the panel, each through the protocol
// every agent follows, as agent "human": a review file and the done
// marker that reports it, a done marker that cancels, the friction log
// changed under its lock. The daemon applies the markers as it applies
// any; the panel only shows what follows.

// maxActionBody bounds an action's request body.
const maxActionBody = 64 << 10

// action refuses every action when the panel is read-only, and a body
// that is not JSON.
func (s *Server) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.ReadOnly {
			writeError(w, http.StatusForbidden, "the panel is read-only", "serve it without --read-only to act from it")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "an action takes a JSON body", "send Content-Type: application/json")
			return
		}
		sw := &statusOf{ResponseWriter: w, status: http.StatusOK}
		h(sw, r)
		s.audited(r, sw.status)
	}
}

// audited records an action in the audit by the person who took it: the
// protocol records the panel's agent ("human"), the audit who that was.
func (s *Server) audited(r *http.Request, status int) {
	p := whoOf(r)
	rec := audit.Record{Door: audit.DoorPanel, Action: r.Pattern, Outcome: audit.OK, Agent: HumanAgent, User: p.user, Token: p.token,
		From: r.RemoteAddr, Task: r.PathValue("id")}
	if cp := r.PathValue("cp"); cp != "" {
		rec.Target = "checkpoint=" + cp
	}
	switch {
	case status == http.StatusForbidden || status == http.StatusConflict:
		rec.Outcome, rec.Reason = audit.Refused, http.StatusText(status)
	case status >= 400:
		rec.Outcome, rec.Reason = audit.Failed, http.StatusText(status)
	}
	s.cfg.Audit.Record(r.Context(), rec)
}

// statusOf notes the status a handler answered with.
type statusOf struct {
	http.ResponseWriter
	status int
}

func (w *statusOf) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// decodeBody reads a JSON object of at most maxActionBody bytes into v,
// refusing unknown fields.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActionBody))
	if err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read the request", Err: err, Hint: fmt.Sprintf("send at most %d bytes", maxActionBody)}
	}
	if err := workspace.CheckText("the request", data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read the request", Err: err, Hint: "send one JSON object with the fields docs/HTTP.md lists"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read the request", Msg: "more than one JSON value"}
	}
	return nil
}

// ReviewRequest is the body of the review actions.
type ReviewRequest struct {
	Verdict string                  `json:"verdict"` // approved | revision_needed | rejected
	Notes   string                  `json:"notes,omitempty"`
	Issues  []workspace.ReviewIssue `json:"issues,omitempty"`
	// Target is the subtask an escalation is about (escalations only).
	Target string `json:"target,omitempty"`
}

// ActionResult is what an action wrote.
type ActionResult struct {
	Review string `json:"review,omitempty"` // tasks/<id>/reviews/<r>.json, relative to the task
	Marker string `json:"marker,omitempty"` // the done marker, relative to the root
	Entry  any    `json:"entry,omitempty"`  // a friction entry as it now is
}

func checkVerdict(v string) error {
	switch v {
	case "approved", "revision_needed", "rejected":
		return nil
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "review", Msg: fmt.Sprintf("verdict %q", v), Hint: "use approved, revision_needed or rejected"}
}

// review writes a review as the human and drops the done marker that
// reports it. The review id is base, or base with a random suffix when a
// review of that id exists already (an earlier decision stays final).
func (s *Server) review(ctx context.Context, w http.ResponseWriter, id, base string, rv workspace.Review) {
	rv.Reviewer = HumanAgent
	data, err := json.Marshal(rv)
	if err != nil {
		fail(w, err)
		return
	}
	rid := base
	if _, err := s.st.ReadTaskDoc(ctx, id, "reviews/"+rid+".json"); !isNotFound(err) {
		rid = base + "_" + randomHex(3)
	}
	d, err := service.Deliver(ctx, s.st, workspace.DoneRequest{TaskID: id, Agent: HumanAgent}, func(ctx context.Context) (string, error) {
		return s.st.WriteReview(ctx, id, rid, HumanAgent, data)
	}, service.DeliverOptions{})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, ActionResult{Review: d.Product, Marker: d.Marker})
}

func conflict(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusConflict, msg, "reload the task: its state changed")
}

// decodeReview reads a review action's body and checks its verdict; on
// failure it has answered with the error and ok is false.
func decodeReview(w http.ResponseWriter, r *http.Request) (req ReviewRequest, ok bool) {
	if err := decodeBody(w, r, &req); err != nil {
		fail(w, err)
		return req, false
	}
	if err := checkVerdict(req.Verdict); err != nil {
		fail(w, err)
		return req, false
	}
	return req, true
}

// reviewPlan approves or sends back the plan that awaits review.
func (s *Server) reviewPlan(w http.ResponseWriter, r *http.Request, id string) {
	req, ok := decodeReview(w, r)
	if !ok {
		return
	}
	st, err := s.st.ReadState(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	version := st.PlanVersion
	switch {
	case st.Amendment != nil:
		version = st.Amendment.Version
	case st.PlanStatus != "proposed":
		conflict(w, "no plan awaits review (plan_status "+st.PlanStatus+")")
		return
	}
	rv := workspace.Review{Type: "plan_review", Target: st.PlanID, Verdict: req.Verdict, Notes: req.Notes, Issues: req.Issues}
	s.review(r.Context(), w, id, fmt.Sprintf("plan_v%d_human", version), rv)
}

// reviewCheckpoint approves or sends back a checkpoint awaiting review.
func (s *Server) reviewCheckpoint(w http.ResponseWriter, r *http.Request, id string) {
	cp := r.PathValue("cp")
	if err := workspace.ValidateID("checkpoint id", cp); err != nil {
		fail(w, err)
		return
	}
	req, ok := decodeReview(w, r)
	if !ok {
		return
	}
	st, err := s.st.ReadState(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	c := st.Checkpoints[cp]
	if c == nil {
		writeError(w, http.StatusNotFound, "task "+id+" has no checkpoint "+cp, "")
		return
	}
	if c.Status != "awaiting_review" {
		conflict(w, "checkpoint "+cp+" is "+c.Status+", not awaiting_review")
		return
	}
	rv := workspace.Review{Type: "checkpoint_review", Target: cp, Verdict: req.Verdict, Notes: req.Notes, Issues: req.Issues}
	s.review(r.Context(), w, id, cp+"_human", rv)
}

// answerEscalation records the human's answer to an escalation about a
// subtask (or the task) as an output review of it.
func (s *Server) answerEscalation(w http.ResponseWriter, r *http.Request, id string) {
	req, ok := decodeReview(w, r)
	if !ok {
		return
	}
	target := req.Target
	if target == "" {
		target = id
	}
	if err := workspace.ValidateID("target", target); err != nil {
		fail(w, err)
		return
	}
	if strings.TrimSpace(req.Notes) == "" {
		writeError(w, http.StatusBadRequest, "an answer needs notes", "say what the agents should do")
		return
	}
	rv := workspace.Review{Type: "output_review", Target: target, Verdict: req.Verdict, Notes: req.Notes, Issues: req.Issues}
	s.review(r.Context(), w, id, "escalation_"+target+"_human", rv)
}

// CancelRequest is the body of POST /api/tasks/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, id string) {
	var req CancelRequest
	if err := decodeBody(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	if h, err := s.st.ReadStateHead(r.Context(), id); err == nil && vocab.Finished(h.Status) {
		conflict(w, "task "+id+" is already "+h.Status)
		return
	}
	d, err := service.Cancel(r.Context(), s.st, id, HumanAgent, req.Reason, service.DeliverOptions{})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, ActionResult{Marker: d.Marker})
}

// ResolveRequest is the body of POST /api/friction/{id}/resolve.
type ResolveRequest struct {
	Status string `json:"status"` // applied | dismissed
}

func (s *Server) resolveFriction(w http.ResponseWriter, r *http.Request) {
	fid := r.PathValue("id")
	if err := workspace.ValidateID("friction id", fid); err != nil {
		fail(w, err)
		return
	}
	var req ResolveRequest
	if err := decodeBody(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	en, err := friction.Open(s.st, HumanAgent).Resolve(r.Context(), fid, req.Status)
	if err != nil {
		if errors.Is(err, friction.ErrCorrupt) {
			writeError(w, http.StatusInternalServerError, err.Error(), "fix or move friction/friction.json")
			return
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ActionResult{Entry: en})
}
