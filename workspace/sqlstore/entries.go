package sqlstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Owner is the owner column of a scope's entries rows, after checking
// the scope's ids; task is the task the scope belongs to ("" for the
// agent and global scopes).
func Owner(s workspace.Scope) (own, task string, err error) {
	if _, err := s.Dir(); err != nil {
		return "", "", err
	}
	switch s.Kind {
	case workspace.ScopeThread:
		return s.TaskID, s.TaskID, nil
	case workspace.ScopeSession:
		return s.TaskID + "/" + s.ThreadID, s.TaskID, nil
	case workspace.ScopeAgent:
		return s.Agent, "", nil
	}
	return "", "", nil
}

// Label names the scope in messages, as on files.
func Label(s workspace.Scope) string {
	if s.Kind == workspace.ScopeThread {
		return "env data"
	}
	return string(s.Kind) + " memory"
}

// CheckValue checks an entry's value against the limits; a value over
// the warning size is allowed, with a warning.
func CheckValue(v json.RawMessage, lim workspace.LimitSettings) ([]string, error) {
	if len(v) == 0 {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Msg: "missing value", Field: workspace.FieldValue,
			Hint: `give a JSON value, e.g. {"a":1} or "text"`}
	}
	if len(v) > lim.ValueMaxBytes {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Field: workspace.FieldValue,
			Msg:  fmt.Sprintf("value is %d bytes, over the %d-byte limit", len(v), lim.ValueMaxBytes),
			Hint: "store large data as several keys or as files in the task directory"}
	}
	if _, err := workspace.ParseValue(v, lim.MaxDepth); err != nil {
		return nil, err
	}
	if len(v) > lim.ValueWarnBytes {
		return []string{fmt.Sprintf("value is %d bytes, over the %d-byte warning size: consider splitting it", len(v), lim.ValueWarnBytes)}, nil
	}
	return nil, nil
}

// CheckStore checks a store request: the scope (its owner column and
// task), the key, the agent, the description and the value (its
// warnings).
func CheckStore(sc workspace.Scope, req workspace.StoreRequest, lim workspace.LimitSettings) (own, task string, warns []string, err error) {
	if own, task, err = CheckDelete(sc, req.Key, req.Agent); err != nil {
		return "", "", nil, err
	}
	if err := workspace.ValidateDescription(req.Description); err != nil {
		return "", "", nil, err
	}
	if warns, err = CheckValue(req.Value, lim); err != nil {
		return "", "", nil, err
	}
	return own, task, warns, nil
}

// CheckUpdate checks an update request as CheckStore does a store; one
// that changes nothing is ErrInvalid.
func CheckUpdate(sc workspace.Scope, req workspace.UpdateRequest, lim workspace.LimitSettings) (own, task string, warns []string, err error) {
	if own, task, err = CheckDelete(sc, req.Key, req.Agent); err != nil {
		return "", "", nil, err
	}
	if req.Description != nil {
		if err := workspace.ValidateDescription(*req.Description); err != nil {
			return "", "", nil, err
		}
	}
	if req.Value != nil {
		if warns, err = CheckValue(req.Value, lim); err != nil {
			return "", "", nil, err
		}
	} else if req.Description == nil {
		return "", "", nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "update " + req.Key, Msg: "nothing to update",
			Hint: "give a new description, a new value or both"}
	}
	return own, task, warns, nil
}

// CheckGet checks the scope and key of a get.
func CheckGet(sc workspace.Scope, key string) (own, task string, err error) {
	if own, task, err = Owner(sc); err != nil {
		return "", "", err
	}
	if err := workspace.ValidateKey(key); err != nil {
		return "", "", err
	}
	return own, task, nil
}

// CheckDelete checks the scope, key and agent of a delete.
func CheckDelete(sc workspace.Scope, key, agent string) (own, task string, err error) {
	if own, task, err = CheckGet(sc, key); err != nil {
		return "", "", err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return "", "", err
	}
	return own, task, nil
}

// NoSuchKey is the ErrNotFound of a get or delete (verb) of a missing
// key.
func NoSuchKey(verb string, sc workspace.Scope, key string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: fmt.Sprintf("%s %s %q", verb, Label(sc), key), Msg: "no such key",
		Hint: "list the keys of the scope"}
}

// UpdateOp names an update of key in messages.
func UpdateOp(sc workspace.Scope, key string) string {
	return fmt.Sprintf("update %s %q", Label(sc), key)
}

// NoKeyToUpdate is the ErrNotFound of an update (op) of a missing key.
func NoKeyToUpdate(op string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: "no such key", Hint: "create it first with store"}
}

// ApplyUpdate turns e, the entry as stored, into the entry req makes of
// it at t (its version bumped); an IfVersion that no longer matches is
// ErrConflict.
func ApplyUpdate(e *workspace.Entry, req workspace.UpdateRequest, op string, t time.Time) error {
	if req.IfVersion > 0 && e.Version != req.IfVersion {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: fmt.Sprintf("version is %d, not %d", e.Version, req.IfVersion),
			Hint: "read it again (get) and retry with the current version"}
	}
	if req.Description != nil {
		e.ShortDescription = *req.Description
	}
	if req.Value != nil {
		e.Value = req.Value
	}
	e.StoredBy, e.UpdatedAt = req.Agent, t
	e.Version++
	return nil
}

// MakesEvents says the writes of the scope's entries make events: the
// thread and session scopes', in the task's events.
func MakesEvents(sc workspace.Scope) bool {
	return sc.Kind == workspace.ScopeThread || sc.Kind == workspace.ScopeSession
}

// EntryEventLine is the events line of an entry write: env_<verb> in the
// thread scope, memory_<verb> in the session scope, "" in a scope
// without events. token is the id of the token the write came with ("":
// none). A version of 0 leaves the version attribute out; it sorts last.
// The SQL stores' triggers write the same line.
func EntryEventLine(sc workspace.Scope, verb, key, agent, token string, version int, t time.Time) string {
	if !MakesEvents(sc) {
		return ""
	}
	attrs := map[string]string{"key": key, "agent": agent}
	if token != "" {
		attrs[workspace.EventToken] = token
	}
	if version > 0 {
		attrs["version"] = strconv.Itoa(version)
	}
	name := "env_" + verb
	if sc.Kind == workspace.ScopeSession {
		attrs["scope"], attrs["thread"] = "session", sc.ThreadID
		name = "memory_" + verb
	}
	return workspace.FormatEvent(workspace.Event{Time: t, Name: name, TaskID: sc.TaskID, Attrs: attrs})
}
