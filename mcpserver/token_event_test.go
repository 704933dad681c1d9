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

// TestMarkersNameTheToken: a claim and a done dropped by a session run on
// a token carry the token's id, which the daemon names in their events;
// a session without one drops markers that carry none.
func TestMarkersNameTheToken(t *testing.T) {
	w := fixture(t)
	writeState(t, w)
	with := connect(t, w, Options{TaskID: "t1", ThreadID: "th_solver", Agent: "solver", TokenID: "tk_0123456789ab"})
	without := connect(t, w, Options{TaskID: "t1", ThreadID: "th_observer", Agent: "observer"})
	mustCall(t, with, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"})
	mustCall(t, without, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"})
	mustCall(t, with, ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"summary": "done"}})
	for _, c := range []struct {
		prefix, token string
	}{{".claim.solver.", "tk_0123456789ab"}, {".done.solver.", "tk_0123456789ab"}, {".claim.observer.", ""}} {
		ms := markers(t, w, c.prefix)
		if len(ms) != 1 || ms[0].Token != c.token {
			t.Errorf("%s markers %+v, want one naming token %q", c.prefix, ms, c.token)
		}
	}
}
