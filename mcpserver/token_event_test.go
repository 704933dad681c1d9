package mcpserver

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestWritesNameTheToken: a session run on a token names the token's id
// in the events of its writes, the id the audit records for it; a session
// without one names none.
func TestWritesNameTheToken(t *testing.T) {
	w := fixture(t)
	with := connect(t, w, Options{TaskID: "t1", ThreadID: "th_solver", Agent: "solver", TokenID: "tk_0123456789ab"})
	without := connect(t, w, Options{TaskID: "t1", ThreadID: "th_solver", Agent: "solver"})
	if text, isErr := call(t, with, ToolStoreEnvData, map[string]any{"key": "by_token", "short_description": "d", "value": 1}); isErr {
		t.Fatalf("store with a token: %s", text)
	}
	if text, isErr := call(t, without, ToolStoreEnvData, map[string]any{"key": "by_host", "short_description": "d", "value": 1}); isErr {
		t.Fatalf("store without: %s", text)
	}
	got := map[string]string{}
	if _, err := w.ReadEventsFrom(t.Context(), "t1", 0, func(e workspace.PositionedEvent) {
		if e.Name == "env_stored" {
			got[e.Attrs["key"]] = e.Attrs[workspace.EventToken]
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got["by_token"] != "tk_0123456789ab" || got["by_host"] != "" {
		t.Fatalf("tokens named by the env_stored events: %v", got)
	}
}
