package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// testTokenInEvents: a write made with a token in its context
// (workspace.WithToken, as the API and MCP make them) names the token's
// id beside the agent in every event it appends — an entry stored (one
// statement on PostgreSQL), updated and deleted in a task's env and a
// thread's session, a namespaced memory item put and deleted — and a
// write without one names none.
func testTokenInEvents(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	const tok = "tk_0123456789ab"
	ctx := workspace.WithToken(bg, tok)
	for _, sc := range []workspace.Scope{{Kind: workspace.ScopeThread, TaskID: "t1"}, {Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: "th1"}} {
		_, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "with", Value: json.RawMessage(`1`), Agent: "worker_1"})
		ok(t, err, "store with a token")
		v := json.RawMessage(`2`)
		_, err = s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "with", Value: v, Agent: "worker_1"})
		ok(t, err, "update with a token")
		ok(t, s.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "with", Agent: "worker_1"}), "delete with a token")
		_, err = s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "without", Value: json.RawMessage(`1`), Agent: "cli"})
		ok(t, err, "store without a token")
	}
	var named, unnamed []string
	all, _, err := s.ReadEvents(bg, "t1")
	ok(t, err, "read the events")
	read, _ := readEventsFrom(t, s, "t1", 0, len(all))
	for _, e := range read {
		switch e.Attrs["key"] {
		case "with":
			if e.Attrs[workspace.EventToken] != tok || e.Attrs["agent"] != "worker_1" {
				t.Errorf("%s of a write with token %s: %+v", e.Name, tok, e.Attrs)
			}
			named = append(named, e.Name)
		case "without":
			if _, has := e.Attrs[workspace.EventToken]; has {
				t.Errorf("%s of a write without a token names one: %+v", e.Name, e.Attrs)
			}
			unnamed = append(unnamed, e.Name)
		}
	}
	same(t, "the events of the writes with a token", strings.Join(named, " "),
		"env_stored env_updated env_deleted memory_stored memory_updated memory_deleted")
	same(t, "the events of the writes without", strings.Join(unnamed, " "), "env_stored memory_stored")

	m := memoryOf(t, s)
	ns := workspace.Namespace{"users", "42"}
	_, err = m.PutMemory(ctx, workspace.MemoryPutRequest{Namespace: ns, Key: "k", Value: json.RawMessage(`{}`), Agent: "worker_1"})
	ok(t, err, "put an item with a token")
	ok(t, m.DeleteMemory(ctx, workspace.MemoryDeleteRequest{Namespace: ns, Key: "k", Agent: "worker_1"}), "delete it with a token")
	_, err = m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "k2", Value: json.RawMessage(`{}`), Agent: "cli"})
	ok(t, err, "put an item without")
	var got []string
	// A store may hold an event back for a moment (PostgreSQL, while an
	// older transaction runs), never for good.
	poll.Until(t, 30*time.Second, "3 memory events readable", func() (bool, string) {
		got = nil
		_, err := m.ReadMemoryEvents(bg, 0, func(e workspace.PositionedEvent) {
			got = append(got, e.Name+":"+e.Attrs["key"]+":"+e.Attrs[workspace.EventToken])
		})
		ok(t, err, "read the memory events")
		return len(got) >= 3, strings.Join(got, " ")
	})
	same(t, "the memory events", strings.Join(got, " "), "memory_stored:k:"+tok+" memory_deleted:k:"+tok+" memory_stored:k2:")
}
