package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// scope is the entry scope a route's path names, checked against the
// grant: the task's env data, a thread's session, the global memory, an
// agent's memory (a token's own only). write says the call writes.
func (c *call) scope(write bool) (workspace.Scope, error) {
	p := c.r.URL.Path
	switch {
	case strings.HasPrefix(p, Prefix+"memory/global"):
		return workspace.Scope{Kind: workspace.ScopeGlobal}, c.mayGlobal(write)
	case strings.HasPrefix(p, Prefix+"memory/agents/"):
		a := c.r.PathValue("agent")
		if err := workspace.ValidateID("agent", a); err != nil {
			return workspace.Scope{}, err
		}
		if c.who.Token && a != c.agent() {
			return workspace.Scope{}, refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not reach the memory of agent %s", c.agent(), a),
				"use /api/v1/memory/agents/"+c.agent()+": a token reaches its own agent's memory")
		}
		return workspace.Scope{Kind: workspace.ScopeAgent, Agent: a}, nil
	}
	id, err := c.taskID()
	if err != nil {
		return workspace.Scope{}, err
	}
	if th := c.r.PathValue("thread"); th != "" {
		if err := workspace.ValidateID("thread id", th); err != nil {
			return workspace.Scope{}, err
		}
		if _, err := c.h.st.GetThread(c.r.Context(), id, th); err != nil {
			return workspace.Scope{}, err
		}
		return workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: th}, nil
	}
	return workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}, nil
}

// key is the entry key of the path, checked.
func (c *call) key() (string, error) {
	k := c.r.PathValue("key")
	return k, workspace.ValidateKey(k)
}

func (h *Handler) listEntries(c *call) error {
	s, err := c.scope(false)
	if err != nil {
		return err
	}
	var q service.EntryListing
	q.Prefix = c.r.URL.Query().Get("prefix")
	if !utf8.ValidString(q.Prefix) {
		return workspace.Invalidf("parameter prefix", "give the start of the keys wanted, as UTF-8", "not UTF-8")
	}
	if q.Last, err = c.intQuery("last", 0, 1, 1000); err != nil {
		return err
	}
	if q.Values, err = c.boolQuery("values"); err != nil {
		return err
	}
	items, err := service.ListEntries(c.r.Context(), h.st, s, q)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, map[string]any{"entries": items})
}

func (h *Handler) getEntry(c *call) error {
	s, err := c.scope(false)
	if err != nil {
		return err
	}
	k, err := c.key()
	if err != nil {
		return err
	}
	e, err := h.st.GetEntry(c.r.Context(), s, k)
	if err != nil {
		return err
	}
	c.w.Header().Set("ETag", etag(e.Version))
	return c.reply(http.StatusOK, e)
}

// entryHistory answers the kept versions of a memory entry, oldest
// first: who wrote each and what it held before it was replaced.
func (h *Handler) entryHistory(c *call) error {
	s, err := c.scope(false)
	if err != nil {
		return err
	}
	k, err := c.key()
	if err != nil {
		return err
	}
	versions, err := service.EntryHistory(c.r.Context(), h.st, s, k)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, map[string]any{"versions": versions})
}

// entryWrite is PUT's body.
type entryWrite struct {
	Value            json.RawMessage `json:"value"`
	ShortDescription *string         `json:"short_description"`
}

func (h *Handler) putEntry(c *call) error {
	s, err := c.scope(true)
	if err != nil {
		return err
	}
	k, err := c.key()
	if err != nil {
		return err
	}
	cond, err := conditions(c.r)
	if err != nil {
		return err
	}
	var in entryWrite
	if err := c.decode("the entry", &in); err != nil {
		return err
	}
	if len(in.Value) == 0 {
		return workspace.FieldErr(workspace.ErrInvalid, "store "+s.Label()+" "+strconv.Quote(k), workspace.FieldValue, `give the value: {"value": ...}`, "no value")
	}
	ctx := c.r.Context()
	var res workspace.Result
	switch {
	case cond.ifVersion > 0:
		res, err = h.st.UpdateEntry(ctx, s, workspace.UpdateRequest{Key: k, Description: in.ShortDescription, Value: in.Value, Agent: c.agent(), IfVersion: cond.ifVersion})
		if errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrNotFound) {
			return h.preconditionFailed(c, s, k, fmt.Sprintf("the entry is no longer at version %d", cond.ifVersion), err)
		}
	default:
		desc := ""
		if in.ShortDescription != nil {
			desc = *in.ShortDescription
		}
		res, err = h.st.StoreEntry(ctx, s, workspace.StoreRequest{Key: k, Description: desc, Value: in.Value, Agent: c.agent(), IfAbsent: cond.ifAbsent})
		if cond.ifAbsent && errors.Is(err, workspace.ErrConflict) {
			return h.preconditionFailed(c, s, k, "the entry exists", err)
		}
	}
	if err != nil {
		return err
	}
	c.w.Header().Set("ETag", etag(res.Entry.Version))
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	return c.reply(http.StatusOK, map[string]any{"entry": res.Entry, "warnings": res.Warnings})
}

func (h *Handler) deleteEntry(c *call) error {
	s, err := c.scope(true)
	if err != nil {
		return err
	}
	k, err := c.key()
	if err != nil {
		return err
	}
	cond, err := deleteConditions(c.r)
	if err != nil {
		return err
	}
	err = h.st.DeleteEntry(c.r.Context(), s, workspace.DeleteRequest{Key: k, Agent: c.agent(), IfVersion: cond.ifVersion})
	if cond.ifVersion > 0 && errors.Is(err, workspace.ErrConflict) {
		return h.preconditionFailed(c, s, k, fmt.Sprintf("the entry is no longer at version %d", cond.ifVersion), err)
	}
	if err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// preconditionFailed is the 412 of a compare-and-set that failed, with
// the version stored now (0: none).
func (h *Handler) preconditionFailed(c *call, s workspace.Scope, key, msg string, cause error) error {
	cur := 0
	if e, err := h.st.GetEntry(c.r.Context(), s, key); err == nil {
		cur = e.Version
	}
	hint := fmt.Sprintf("read it again (its version is %d now) and decide from what it holds", cur)
	if cur == 0 {
		hint = "there is no such entry now: create it without If-Match"
	}
	return &apiError{status: http.StatusPreconditionFailed, kind: kindVersionConflict, msg: msg + ": " + workspace.Reason(cause), hint: hint, current: &cur}
}

// precond is what a request's If-Match and If-None-Match ask.
type precond struct {
	ifVersion int  // If-Match: "N"
	ifAbsent  bool // If-None-Match: *
}

// conditions reads If-Match ("N", N a version; a weak W/"N" too) and
// If-None-Match (* only).
func conditions(r *http.Request) (precond, error) {
	var p precond
	if v := strings.TrimSpace(r.Header.Get("If-Match")); v != "" {
		n, ok := parseETag(v)
		if !ok {
			return p, &workspace.Error{Kind: workspace.ErrInvalid, Op: "If-Match " + strconv.Quote(v), Msg: "not a version",
				Hint: `send the ETag a read gave, e.g. If-Match: "3"`}
		}
		p.ifVersion = n
	}
	if v := strings.TrimSpace(r.Header.Get("If-None-Match")); v != "" {
		if v != "*" {
			return p, &workspace.Error{Kind: workspace.ErrInvalid, Op: "If-None-Match " + strconv.Quote(v), Msg: "only * is understood",
				Hint: "send If-None-Match: * to create only"}
		}
		p.ifAbsent = true
	}
	if p.ifAbsent && p.ifVersion > 0 {
		return p, &workspace.Error{Kind: workspace.ErrInvalid, Op: "preconditions", Msg: "If-Match and If-None-Match together can never both hold",
			Hint: "send one of them"}
	}
	return p, nil
}

// deleteConditions is conditions for a delete, where only If-Match means
// something.
func deleteConditions(r *http.Request) (precond, error) {
	p, err := conditions(r)
	if err == nil && p.ifAbsent {
		return p, &workspace.Error{Kind: workspace.ErrInvalid, Op: "delete", Msg: "If-None-Match goes with a write", Hint: "use If-Match: \"N\" to delete only version N"}
	}
	return p, err
}

func etag(version int) string { return `"` + strconv.Itoa(version) + `"` }

func parseETag(v string) (int, bool) {
	v = strings.TrimPrefix(v, "W/")
	v = strings.Trim(v, `"`)
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0 && n < 1<<31
}
