package workspace

import (
	"context"
	"encoding/json"
	"path"
	"strconv"
)

// ScopeKind names where an entry lives: the task's env data, one thread's
// session, one agent's memory, or the global memory.
type ScopeKind string

// The four entry scopes.
const (
	ScopeThread  ScopeKind = "thread"  // tasks/<task>/env/: env data shared by the delegation tree
	ScopeSession ScopeKind = "session" // tasks/<task>/sessions/<thread>/: one thread's private entries
	ScopeAgent   ScopeKind = "agent"   // memory/agents/<agent>/: one agent's long-term memory
	ScopeGlobal  ScopeKind = "global"  // memory/global/: shared by every agent and task
)

// Scope locates an entry directory. TaskID is needed for thread and
// session scopes, ThreadID for session, Agent for agent.
type Scope struct {
	Kind     ScopeKind
	TaskID   string
	ThreadID string
	Agent    string
}

// ParseScope maps a scope name to a ScopeKind: thread, session, agent and
// global, the names every door uses (the MCP memory tools' scope, the
// HTTP API's paths). The old spellings — po for agent, env for global
// (which read as the task's env data), env_data for thread — are refused
// with a hint naming the new one.
func ParseScope(s string) (ScopeKind, error) {
	switch s {
	case "thread":
		return ScopeThread, nil
	case "session":
		return ScopeSession, nil
	case "agent":
		return ScopeAgent, nil
	case "global":
		return ScopeGlobal, nil
	}
	op := "scope " + strconv.Quote(s)
	switch s {
	case "po":
		return "", Invalidf(op, "po is now agent: use the scope agent (one agent's memory, kept forever)", "an old name")
	case "env":
		return "", Invalidf(op, "env is now global: use the scope global (the memory every agent shares); the task's env data is the thread scope", "an old name")
	case "env_data":
		return "", Invalidf(op, "env_data is now thread: use the scope thread (the task's env data)", "an old name")
	}
	return "", Invalidf(op, "use one of thread, session, agent, global", "unknown scope")
}

// Dir is the scope's directory relative to the root, after validating ids.
func (s Scope) Dir() (string, error) {
	switch s.Kind {
	case ScopeThread:
		if err := ValidateID("task id", s.TaskID); err != nil {
			return "", err
		}
		return path.Join("tasks", s.TaskID, "env"), nil
	case ScopeSession:
		if err := ValidateID("task id", s.TaskID); err != nil {
			return "", err
		}
		if err := ValidateID("thread id", s.ThreadID); err != nil {
			return "", err
		}
		return path.Join("tasks", s.TaskID, "sessions", s.ThreadID), nil
	case ScopeAgent:
		if err := ValidateID("agent", s.Agent); err != nil {
			return "", err
		}
		return path.Join("memory", "agents", s.Agent), nil
	case ScopeGlobal:
		return path.Join("memory", "global"), nil
	}
	return "", Invalidf("scope", "use one of thread, session, agent, global", "unknown scope %q", s.Kind)
}

// Label names the scope in messages: "env data" for the thread scope,
// "<scope> memory" for the others.
func (s Scope) Label() string {
	if s.Kind == ScopeThread {
		return "env data"
	}
	return string(s.Kind) + " memory"
}

// ListHint says how to see the keys of the scope.
func (s Scope) ListHint() string {
	if s.Kind == ScopeThread {
		return "list task " + s.TaskID + "'s env data to see which keys exist"
	}
	return "list the " + s.Label() + " to see which keys exist"
}

// EventPrefix is the first word of the scope's event names: env or memory.
func (s Scope) EventPrefix() string {
	if s.Kind == ScopeThread {
		return "env"
	}
	return "memory"
}

// StoreRequest is a store (create or replace).
type StoreRequest struct {
	Key         string
	Description string
	Value       json.RawMessage
	Agent       string
	// IfAbsent makes the store a create only: it fails with ErrConflict,
	// changing nothing, when the key exists.
	IfAbsent bool
}

// DeleteRequest removes an entry.
type DeleteRequest struct {
	Key   string
	Agent string
	// IfVersion, when > 0, makes the delete a compare-and-delete: it
	// fails with ErrConflict, changing nothing, unless the stored version
	// equals it.
	IfVersion int
}

// UpdateRequest changes an existing entry. Nil fields are kept.
type UpdateRequest struct {
	Key         string
	Description *string
	Value       json.RawMessage // nil keeps the value
	Agent       string
	// IfVersion, when > 0, makes the update a compare-and-swap: it fails
	// with ErrConflict unless the stored version equals it.
	IfVersion int
}

// Result is what a write returns: the entry as written and any warnings
// (a value over the warning size).
type Result struct {
	Entry    Entry
	Warnings []string
}

// Entries lists the entry operations (store, get, list, update, delete);
// files.Store implements them over the JSON tree.
type Entries interface {
	StoreEntry(ctx context.Context, s Scope, req StoreRequest) (Result, error)
	GetEntry(ctx context.Context, s Scope, key string) (Entry, error)
	ListEntries(ctx context.Context, s Scope) ([]ManifestItem, error)
	UpdateEntry(ctx context.Context, s Scope, req UpdateRequest) (Result, error)
	DeleteEntry(ctx context.Context, s Scope, req DeleteRequest) error
}

// Skipped names a file a listing passed over and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}
