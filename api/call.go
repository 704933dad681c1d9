package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// call is one request being served: who it acts as, and the helpers that
// read its input.
type call struct {
	h   *Handler
	w   http.ResponseWriter
	r   *http.Request
	who httpauth.Caller
	// data is the body once read (bodyWithin), kept for a request served
	// again.
	data []byte
}

// agent is the agent the request acts as.
func (c *call) agent() string { return c.who.Grant.Agent }

// wrap admits a request through the gate and answers a handler's error as
// a problem. Every refusal (401, 403) is logged with the agent and why.
// A route whose operation the store checks a grant guard in (guarded)
// is admitted on the token's remembered grant when there is one
// (httpauth.Gate.CallerGuarded): when the store finds the token's row
// changed, or the remembered grant refuses the request, the token is
// looked up and the request served again, once.
func (h *Handler) wrap(serve func(*Handler, *call) error, guarded bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{h: h, w: w, r: r}
		err := h.serve(c, serve, guarded)
		if c.who.Guarded() && grantRefused(err) {
			h.cfg.Gate.Forget(r)
			c.r, c.who = r, httpauth.Caller{}
			err = h.serve(c, serve, false)
		}
		if err == nil {
			return
		}
		status, _ := classify(err)
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			agent := c.agent()
			if agent == "" {
				agent = "-"
			}
			h.log.Warn("api: request refused", "agent", agent, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "status", status, "reason", err.Error())
		}
		if status == http.StatusInternalServerError {
			h.log.Error("api: request failed", "agent", c.agent(), "method", r.Method, "path", r.URL.Path, "err", err.Error())
		}
		writeProblem(w, r, err)
	}
}

// serve admits c (on a remembered grant when guarded) and serves it.
func (h *Handler) serve(c *call, serve func(*Handler, *call) error, guarded bool) error {
	if err := h.admit(c, guarded); err != nil {
		return err
	}
	ctx := c.r.Context()
	if c.who.Token {
		// The token is named in the events the request's writes append.
		ctx = workspace.WithToken(ctx, c.who.Grant.ID())
	}
	if c.who.Guarded() {
		ctx = workspace.WithGrantGuard(ctx, c.who.Guard)
	}
	c.r = c.r.WithContext(ctx)
	return serve(h, c)
}

// grantRefused says err is the store finding the token's row changed,
// or a refusal the grant decided (403): what a request admitted on a
// remembered grant is served again for, after a look-up.
func grantRefused(err error) bool {
	if errors.Is(err, workspace.ErrGrantChanged) {
		return true
	}
	status, _ := classify(err)
	return status == http.StatusForbidden
}

func (h *Handler) admit(c *call, guarded bool) error {
	if h.cfg.Gate == nil {
		return refuse(http.StatusServiceUnavailable, kindUnsafe, "this server admits no agent: it has no gate", "serve the API through workspaced web, mcp --http or serve --listen")
	}
	caller := h.cfg.Gate.Caller
	if guarded {
		caller = h.cfg.Gate.CallerGuarded
	}
	who, err := caller(c.r)
	c.who = who
	if v := h.cfg.Gate.OAuth; v != nil && errors.Is(err, httpauth.ErrNoToken) {
		c.w.Header().Set("WWW-Authenticate", v.Challenge("", ""))
	}
	switch {
	case errors.Is(err, oauth.ErrNoGrant):
		c.w.Header().Set("WWW-Authenticate", h.cfg.Gate.OAuth.Challenge(oauth.ErrorInsufficientScope, workspace.Reason(err)))
		return refuse(http.StatusForbidden, kindForbidden, "the access token grants nothing here: "+workspace.Reason(err), service.Hint(err))
	case errors.Is(err, httpauth.ErrAccess):
		c.w.Header().Set("WWW-Authenticate", h.cfg.Gate.OAuth.Challenge(oauth.ErrorInvalidToken, workspace.Reason(err)))
		return refuse(http.StatusUnauthorized, kindUnauthorized, "the access token is refused: "+workspace.Reason(err),
			"get a new access token from the authorization server")
	case errors.Is(err, httpauth.ErrNoToken):
		return refuse(http.StatusUnauthorized, kindUnauthorized, "no bearer token: this listener admits agents by their tokens",
			"send 'Authorization: Bearer <token>' with a token of 'workspaced token add'")
	case errors.Is(err, httpauth.ErrUnknownToken):
		return refuse(http.StatusUnauthorized, kindUnauthorized, "the bearer token is unknown or revoked",
			"ask for a token ('workspaced token add'); 'workspaced token list' shows the ones there are")
	case errors.Is(err, tokens.ErrExpired):
		return refuse(http.StatusUnauthorized, kindUnauthorized, "the bearer token has ended: "+workspace.Reason(err),
			"use the token that replaced it, or ask for a new one ('workspaced token add')")
	case errors.Is(err, httpauth.ErrUntrusted):
		return refuse(http.StatusServiceUnavailable, kindUnsafe, "the server's agents' tokens cannot be trusted: its operator sees why in the log",
			"whoever runs the server must fix the agents file (mode 600, valid JSON)")
	case errors.Is(err, httpauth.ErrOtherAgent):
		return refuse(http.StatusForbidden, kindForbidden, err.Error(), "leave the Workspace-Agent header out: the token names the agent")
	case errors.Is(err, httpauth.ErrHost):
		return refuse(http.StatusForbidden, kindForbidden, "host "+c.r.Host+" is not a loopback name",
			"reach the server as http://127.0.0.1:PORT/ or http://localhost:PORT/, or with a token")
	}
	return err
}

// taskID is the task of the path, checked: an id (400), covered by the
// grant (403), there (404).
func (c *call) taskID() (string, error) {
	id := c.r.PathValue("task")
	if err := workspace.ValidateID("task id", id); err != nil {
		return "", err
	}
	if err := c.mayTask(id); err != nil {
		return "", err
	}
	if _, err := c.h.st.GetTask(c.r.Context(), id); err != nil {
		return "", err
	}
	return id, nil
}

// mayTask refuses a task the grant does not cover.
func (c *call) mayTask(id string) error {
	g := c.who.Grant
	if g.Task(id) {
		return nil
	}
	return refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not work on task %s: its token covers %s", g.Agent, id, g.TaskList()),
		"name a task the token covers, or ask for a token that covers this one")
}

// may refuses what the grant does not hold the right to do.
func (c *call) may(right, what string) error {
	if c.who.Grant.Can(right) {
		return nil
	}
	return refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not %s: its token does not hold the right %q", c.agent(), what, right),
		"leave it to an agent that may, or ask for a token with the right ('workspaced token add --may "+right+"')")
}

// mayGlobal refuses reading (or writing) the global memory to a grant
// without that access.
func (c *call) mayGlobal(write bool) error {
	g := c.who.Grant
	switch {
	case write && !g.WriteGlobal():
		return refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not write the global memory (its token gives it %s access)", g.Agent, access(g)),
			"keep it in the agent's own memory, or ask for a token with global memory write")
	case !write && !g.ReadGlobal():
		return refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not read the global memory (its token gives it no access)", g.Agent),
			"use the agent's own memory, or ask for a token with global memory read")
	}
	return nil
}

func access(g tokens.Grant) string {
	if g.ReadGlobal() {
		return "read-only"
	}
	return "no"
}

// body reads the request's JSON body: application/json (415 otherwise),
// at most MaxBodyBytes (413, before anything past the bound is read).
func (c *call) body() ([]byte, error) { return c.bodyWithin(c.h.cfg.MaxBodyBytes) }

// document reads a body that is a task's document (a plan, an output, a
// review): bounded by the largest file the store takes, as the daemon
// reads products, rather than by the largest value.
func (c *call) document() ([]byte, error) {
	return c.bodyWithin(max(c.h.cfg.MaxBodyBytes, int64(c.h.st.Settings().Limits.MaxFileBytes)+bodySlack))
}

// bodyWithin reads the request's JSON body, at most max bytes.
func (c *call) bodyWithin(limit int64) ([]byte, error) {
	if c.data != nil {
		return c.data, nil
	}
	if ct := c.r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, refuse(http.StatusUnsupportedMediaType, kindMediaType, fmt.Sprintf("the body is %q, not JSON", ct), "send the body as application/json")
		}
	} else {
		return nil, refuse(http.StatusUnsupportedMediaType, kindMediaType, "the body has no Content-Type", "send the body as application/json")
	}
	if c.r.ContentLength > limit {
		return nil, tooLarge(c.r.ContentLength, limit)
	}
	// Read into a buffer of the announced size (the bound checked above),
	// not one grown by doubling.
	buf := bytes.NewBuffer(make([]byte, 0, max(c.r.ContentLength, 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(c.w, c.r.Body, limit))
	data := buf.Bytes()
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return nil, tooLarge(-1, limit)
	}
	if err != nil {
		return nil, refuse(http.StatusBadRequest, kindInvalid, "read the body: "+err.Error(), "")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, refuse(http.StatusBadRequest, kindInvalid, "the body is empty", "send a JSON document")
	}
	c.data = data
	return data, nil
}

func tooLarge(n, max int64) error {
	msg := fmt.Sprintf("the body is over %d bytes", max)
	if n > 0 {
		msg = fmt.Sprintf("the body is %d bytes, over %d", n, max)
	}
	return refuse(http.StatusRequestEntityTooLarge, kindTooLarge, msg, "store large data as several keys, or as files in the task directory")
}

// decode reads the body into v: strict JSON, no unknown field.
func (c *call) decode(what string, v any) error {
	data, err := c.body()
	if err != nil {
		return err
	}
	// A body is an envelope one level over the value it carries ({"value":
	// ...}), which the store checks at MaxDepth itself: a value the store
	// takes must not be refused for the envelope's level.
	return decodeStrict(what, data, c.h.st.Settings().Limits.MaxDepth+1, v)
}

// decodeStrict decodes data into v within the depth limit, refusing text
// that is not UTF-8 (which the decoder would rewrite), an unknown field,
// a wrong type and data after the document.
func decodeStrict(what string, data []byte, maxDepth int, v any) error {
	if err := workspace.CheckText(what, data); err != nil {
		return err
	}
	if err := workspace.CheckDepth(data, maxDepth); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "parse " + what, Err: err, Hint: "flatten the document"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "parse " + what, Err: workspace.DescribeJSONError(data, err),
			Hint: "send one JSON object with the fields the API document (GET /api/v1/openapi.json) lists"}
	}
	if dec.More() {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "parse " + what, Msg: "data after the JSON document", Hint: "send one JSON document"}
	}
	return nil
}

// reply answers with v as JSON.
func (c *call) reply(status int, v any) error { return c.replyWith(json.Marshal, status, v) }

// replyWith answers with v as JSON, encoded by marshal.
func (c *call) replyWith(marshal func(any) ([]byte, error), status int, v any) error {
	data, err := marshal(v)
	if err != nil {
		return fmt.Errorf("encode the response: %w", err)
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_, _ = c.w.Write(data)
	_, _ = c.w.Write([]byte{'\n'})
	return nil
}

// query helpers

// intQuery is the query parameter name as a whole number in [min, max],
// def when absent.
func (c *call) intQuery(name string, def, min, max int) (int, error) {
	v := c.r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter " + name, Msg: fmt.Sprintf("%q is not a whole number from %d to %d", v, min, max),
			Hint: fmt.Sprintf("give %s=N with N from %d to %d, or leave it out", name, min, max)}
	}
	return n, nil
}

// boolQuery is the query parameter name as true or false (absent: false).
func (c *call) boolQuery(name string) (bool, error) {
	switch v := c.r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter " + name, Msg: fmt.Sprintf("%q is not true or false", v),
			Hint: "give " + name + "=true or " + name + "=false"}
	}
}

// parseWait reads a wait for a verdict: a positive Go duration within
// MaxWait; "" is no wait.
func (h *Handler) parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > h.cfg.MaxWait {
		return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "wait " + strconv.Quote(s),
			Msg: "not a positive duration within " + h.cfg.MaxWait.String(), Hint: "give a duration like 500ms, 30s or 1m"}
	}
	return d, nil
}
