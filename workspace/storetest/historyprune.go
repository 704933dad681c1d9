package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// testHistoryRetention: a retention run keeps, of each global and agent
// memory entry's earlier versions, the policy's HistoryKeep newest and
// removes the older ones — reported, and in a dry run only counted — and
// leaves the live entries and a key with no more than that alone.
func testHistoryRetention(t *testing.T, s workspace.Store, _ Hooks) {
	h, has := workspace.As[workspace.EntryHistory](s)
	if !has {
		t.Fatalf("%T keeps no memory history (workspace.EntryHistory)", s)
	}
	global := workspace.Scope{Kind: workspace.ScopeGlobal}
	mine := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "agent_a"}
	write := func(sc workspace.Scope, key string, n int) {
		for i := 1; i <= n; i++ {
			_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: key, Value: json.RawMessage(fmt.Sprint(i)), Agent: "agent_a"})
			ok(t, err, "store "+key)
		}
	}
	write(global, "plan", 6) // 5 earlier versions
	write(global, "other", 2)
	write(mine, "note", 4) // 3 earlier versions
	versions := func(sc workspace.Scope, key string) string {
		hist, err := h.EntryHistory(bg, sc, key)
		ok(t, err, "history of "+key)
		var vs []string
		for _, e := range hist {
			vs = append(vs, string(e.Value))
		}
		return fmt.Sprint(vs)
	}
	policy := retention.Policy{FullDays: 7, SummaryDays: 30, HistoryKeep: 2}
	rep, err := s.Prune(bg, workspace.PruneRequest{Policy: policy, DryRun: true, Agent: "cleanup"})
	ok(t, err, "a dry run")
	same(t, "versions a dry run would remove", rep.HistoryPruned, 3+1)
	same(t, "the global history after a dry run", versions(global, "plan"), "[1 2 3 4 5]")

	rep, err = s.Prune(bg, workspace.PruneRequest{Policy: policy, Agent: "cleanup"})
	ok(t, err, "a run")
	same(t, "versions removed", rep.HistoryPruned, 4)
	same(t, "the global history kept", versions(global, "plan"), "[4 5]")
	same(t, "a history within the bound", versions(global, "other"), "[1]")
	same(t, "the agent's history kept", versions(mine, "note"), "[2 3]")
	live, err := s.GetEntry(bg, global, "plan")
	ok(t, err, "the live entry")
	same(t, "the live entry", string(live.Value), "6")

	// A write after the run keeps its version as before.
	write(global, "plan", 1)
	same(t, "the history after another write", versions(global, "plan"), "[4 5 6]")
	rep, err = s.Prune(bg, workspace.PruneRequest{Policy: policy, Agent: "cleanup"})
	ok(t, err, "a second run")
	same(t, "versions removed by the second run", rep.HistoryPruned, 1)
}
