package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// testEntryHistory: a memory entry keeps its earlier versions as outputs
// do: an overwrite of the global memory by another agent leaves the
// earlier author and value readable, an update and a delete keep the
// version they replace, an agent's memory keeps its own, and the task
// scopes keep none (a history asked of them is refused).
func testEntryHistory(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	h, has := workspace.As[workspace.EntryHistory](s)
	if !has {
		t.Fatalf("%T keeps no memory history (workspace.EntryHistory)", s)
	}
	global := workspace.Scope{Kind: workspace.ScopeGlobal}
	_, err := s.StoreEntry(bg, global, workspace.StoreRequest{Key: "plan", Description: "the plan", Value: json.RawMessage(`{"by":"a"}`), Agent: "agent_a"})
	ok(t, err, "agent_a stores the plan")
	hist, err := h.EntryHistory(bg, global, "plan")
	ok(t, err, "history of a key written once")
	same(t, "history of a key written once", len(hist), 0)
	_, err = s.StoreEntry(bg, global, workspace.StoreRequest{Key: "plan", Description: "mine now", Value: json.RawMessage(`{"by":"b"}`), Agent: "agent_b"})
	ok(t, err, "agent_b overwrites it")
	v := json.RawMessage(`{"by":"c"}`)
	_, err = s.UpdateEntry(bg, global, workspace.UpdateRequest{Key: "plan", Value: v, Agent: "agent_c"})
	ok(t, err, "agent_c updates it")
	ok(t, s.DeleteEntry(bg, global, workspace.DeleteRequest{Key: "plan", Agent: "agent_d"}), "agent_d deletes it")
	_, err = s.StoreEntry(bg, global, workspace.StoreRequest{Key: "plan", Value: json.RawMessage(`{"by":"e"}`), Agent: "agent_e"})
	ok(t, err, "agent_e stores it again")
	hist, err = h.EntryHistory(bg, global, "plan")
	ok(t, err, "history")
	var got []string
	for _, e := range hist {
		got = append(got, fmt.Sprintf("v%d %s %s %q", e.Version, e.StoredBy, e.Value, e.ShortDescription))
		if e.Key != "plan" || e.CreatedAt.IsZero() || e.UpdatedAt.Before(e.CreatedAt) {
			t.Fatalf("kept version %+v", e)
		}
	}
	same(t, "the kept versions, oldest first", fmt.Sprint(got),
		fmt.Sprint([]string{`v1 agent_a {"by":"a"} "the plan"`, `v2 agent_b {"by":"b"} "mine now"`, `v3 agent_c {"by":"c"} "mine now"`}))
	live, err := s.GetEntry(bg, global, "plan")
	ok(t, err, "get the live entry")
	same(t, "the live entry", string(live.Value)+" "+live.StoredBy, `{"by":"e"} agent_e`)

	mine := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "agent_a"}
	for i := 1; i <= 3; i++ {
		_, err := s.StoreEntry(bg, mine, workspace.StoreRequest{Key: "note", Value: json.RawMessage(fmt.Sprint(i)), Agent: "agent_a"})
		ok(t, err, "store an agent's note")
	}
	hist, err = h.EntryHistory(bg, mine, "note")
	ok(t, err, "an agent's history")
	same(t, "an agent's kept versions", len(hist), 2)
	other, err := h.EntryHistory(bg, workspace.Scope{Kind: workspace.ScopeAgent, Agent: "agent_b"}, "note")
	ok(t, err, "another agent's history")
	same(t, "another agent's kept versions", len(other), 0)
	missing, err := h.EntryHistory(bg, global, "never")
	ok(t, err, "history of a key never written")
	same(t, "history of a key never written", len(missing), 0)

	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for i := 1; i <= 2; i++ {
		_, err := s.StoreEntry(bg, env, workspace.StoreRequest{Key: "k", Value: json.RawMessage(fmt.Sprint(i)), Agent: "worker_1"})
		ok(t, err, "store env data")
	}
	_, err = h.EntryHistory(bg, env, "k")
	is(t, err, workspace.ErrInvalid, "the history of env data")
	_, err = h.EntryHistory(bg, global, "bad\x00key")
	is(t, err, workspace.ErrInvalid, "the history of a bad key")
}
