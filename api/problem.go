package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// The kinds of error a problem names (its "kind", and the last part of
// its "type").
const (
	kindInvalid         = "invalid"
	kindNotFound        = "not_found"
	kindConflict        = "conflict"
	kindVersionConflict = "version_conflict"
	kindLocked          = "locked"
	kindUnsafe          = "unsafe"
	kindNotServing      = "not_serving"
	kindNoVerdict       = "no_verdict"
	kindUnauthorized    = "unauthorized"
	kindForbidden       = "forbidden"
	kindTooLarge        = "too_large"
	kindMediaType       = "unsupported_media_type"
	kindMethod          = "method_not_allowed"
	kindNotImplemented  = "not_implemented"
	kindTooMany         = "too_many_requests"
	kindUnavailable     = "unavailable"
	kindInternal        = "internal"
)

// ProblemType is the "type" of a problem of kind: a URN, since a problem's
// kind is named by the workspace, not by a page on the web.
func ProblemType(kind string) string { return "urn:workspaced:problem:" + kind }

// Problem is an error response's body (RFC 9457), with the workspace's
// error kind and hint.
type Problem struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail"`
	Instance       string `json:"instance,omitempty"`
	Kind           string `json:"kind"`
	Hint           string `json:"hint,omitempty"`
	Field          string `json:"field,omitempty"`
	CurrentVersion *int   `json:"current_version,omitempty"`
}

// apiError is a refusal of the API's own (a token that may not, a body
// too large, a precondition failed), with its status.
type apiError struct {
	status  int
	kind    string
	msg     string
	hint    string
	current *int // a 412's current version
}

func (e *apiError) Error() string { return e.msg }

func refuse(status int, kind, msg, hint string) error {
	return &apiError{status: status, kind: kind, msg: msg, hint: hint}
}

// classify maps an error to its status and kind: the workspace's kinds
// as the command line's exit codes group them, the gate's refusals, and
// the API's own.
func classify(err error) (int, string) {
	var ae *apiError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.kind
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, kindTooLarge
	case errors.Is(err, httpauth.ErrNoToken), errors.Is(err, httpauth.ErrUnknownToken):
		return http.StatusUnauthorized, kindUnauthorized
	case errors.Is(err, httpauth.ErrOtherAgent), errors.Is(err, httpauth.ErrHost):
		return http.StatusForbidden, kindForbidden
	case errors.Is(err, httpauth.ErrUntrusted):
		return http.StatusServiceUnavailable, kindUnsafe
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, friction.ErrNotFound):
		return http.StatusNotFound, kindNotFound
	case errors.Is(err, workspace.ErrConflict):
		return http.StatusConflict, kindConflict
	case errors.Is(err, workspace.ErrLocked), errors.Is(err, locking.ErrLocked):
		return http.StatusServiceUnavailable, kindLocked
	case errors.Is(err, workspace.ErrNotServing):
		return http.StatusServiceUnavailable, kindNotServing
	case errors.Is(err, workspace.ErrNoVerdict):
		return http.StatusServiceUnavailable, kindNoVerdict
	case errors.Is(err, workspace.ErrInvalid), errors.Is(err, friction.ErrInvalid):
		return http.StatusBadRequest, kindInvalid
	case errors.Is(err, workspace.ErrUnsafe):
		return http.StatusBadRequest, kindUnsafe
	}
	return http.StatusInternalServerError, kindInternal
}

// problemOf is err as a problem.
func problemOf(r *http.Request, err error) Problem {
	status, kind := classify(err)
	p := Problem{Type: ProblemType(kind), Title: http.StatusText(status), Status: status, Detail: err.Error(), Kind: kind,
		Hint: service.Hint(err), Field: workspace.FieldOf(err)}
	if r != nil {
		p.Instance = r.URL.Path
	}
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.hint != "" {
			p.Hint = ae.hint
		}
		p.CurrentVersion = ae.current
	}
	if h := workspace.FaultHint(err); h != "" {
		if p.Hint != "" {
			p.Hint += "; "
		}
		p.Hint += h
	}
	if status == http.StatusInternalServerError {
		p.Title = "Internal Server Error"
	}
	return p
}

// WriteProblem answers a request of the API with a problem of status,
// for what refuses it before the API sees it (a listener's rate limit,
// its Origin check): detail says what, hint how to go on. The kind is
// the status's (too_many_requests for 429, forbidden for 403...).
func WriteProblem(w http.ResponseWriter, r *http.Request, status int, detail, hint string) {
	kind := kindInternal
	switch status {
	case http.StatusBadRequest:
		kind = kindInvalid
	case http.StatusUnauthorized:
		kind = kindUnauthorized
	case http.StatusForbidden:
		kind = kindForbidden
	case http.StatusNotFound:
		kind = kindNotFound
	case http.StatusRequestEntityTooLarge:
		kind = kindTooLarge
	case http.StatusTooManyRequests:
		kind = kindTooMany
	case http.StatusServiceUnavailable:
		kind = kindUnavailable
	}
	writeProblem(w, r, &apiError{status: status, kind: kind, msg: detail, hint: hint})
}

// writeProblem answers with err as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := problemOf(r, err)
	if p.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", guard.Challenge(r, ""))
	}
	data, _ := json.Marshal(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(data, '\n'))
}
