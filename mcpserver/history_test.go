package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// TestMemoryHistory: get_memory_history reads what an overwrite replaced
// — the earlier author and value — in the agent's memory and the global
// one, oldest first; a session's memory keeps none, and a token without
// global memory access may not read the global history.
func TestMemoryHistory(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	alice := connect(t, w, Options{TaskID: "t1", ThreadID: "th_observer", Agent: "observer"})
	bob := connect(t, w, Options{TaskID: "t1", ThreadID: "th_observer", Agent: "solver"})
	mustCall(t, alice, ToolStoreMemory, map[string]any{"key": "plan", "value": "a1", "scope": "global"})
	mustCall(t, bob, ToolStoreMemory, map[string]any{"key": "plan", "value": "b2", "scope": "global"})
	mustCall(t, bob, ToolStoreMemory, map[string]any{"key": "plan", "value": "b3", "scope": "global"})
	var versions []workspace.Entry
	if err := json.Unmarshal([]byte(mustCall(t, alice, ToolGetMemoryHistory, map[string]any{"key": "plan", "scope": "global"})), &versions); err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || versions[0].StoredBy != "observer" || string(versions[0].Value) != `"a1"` ||
		versions[1].StoredBy != "solver" || string(versions[1].Value) != `"b2"` || versions[0].Version != 1 || versions[1].Version != 2 {
		t.Fatalf("global history = %+v", versions)
	}

	// The agent's own memory (the default scope): a key never replaced
	// has no earlier version, one replaced has its first.
	mustCall(t, alice, ToolStoreMemory, map[string]any{"key": "notes", "value": 1})
	if got := mustCall(t, alice, ToolGetMemoryHistory, map[string]any{"key": "notes"}); got != "[]" {
		t.Fatalf("history of a key never replaced = %s", got)
	}
	mustCall(t, alice, ToolStoreMemory, map[string]any{"key": "notes", "value": 2})
	if got := mustCall(t, alice, ToolGetMemoryHistory, map[string]any{"key": "notes", "scope": "agent"}); !strings.Contains(got, `"value":1`) {
		t.Fatalf("agent history = %s", got)
	}
	// Another agent's memory is its own: solver's notes have no history.
	if got := mustCall(t, bob, ToolGetMemoryHistory, map[string]any{"key": "notes"}); got != "[]" {
		t.Fatalf("solver reads %s", got)
	}

	if text, isErr := call(t, alice, ToolGetMemoryHistory, map[string]any{"key": "plan", "scope": "session"}); !isErr || !strings.Contains(text, "scope") {
		t.Fatalf("a session's history: %q (error %v)", text, isErr)
	}

	// Over HTTP, a token without global memory access is refused; one
	// with read access reads it.
	f := newHTTPFixture(t, HTTPOptions{})
	none := f.mustConnect(f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}}), "")
	reader := f.mustConnect(f.token(tokens.Grant{Agent: "solver", Tasks: []string{"t1"}, GlobalMemory: tokens.GlobalRead}), "")
	writer := f.mustConnect(f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}, GlobalMemory: tokens.GlobalWrite}), "")
	callHTTP(t, writer, ToolStoreMemory, map[string]any{"key": "g", "value": "v1", "scope": "global"})
	callHTTP(t, writer, ToolStoreMemory, map[string]any{"key": "g", "value": "v2", "scope": "global"})
	if text, isErr := callHTTP(t, none, ToolGetMemoryHistory, map[string]any{"key": "g", "scope": "global"}); !isErr || !strings.Contains(text, "may not read the global memory") {
		t.Fatalf("no global access: %q (error %v)", text, isErr)
	}
	if text, isErr := callHTTP(t, reader, ToolGetMemoryHistory, map[string]any{"key": "g", "scope": "global"}); isErr || !strings.Contains(text, `"value":"v1"`) {
		t.Fatalf("read access: %q (error %v)", text, isErr)
	}
}
