package mcpserver

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// reusingStore drops every claim under one marker name, as an agent
// library that reuses names would; everything else is the tree's.
type reusingStore struct {
	*files.Store
	name string
}

func (s reusingStore) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	now := time.Now()
	m := workspace.Marker{AgentID: agent, SubtaskID: subtaskID, ClaimedAt: &now}
	if err := s.DropNamedMarker(ctx, taskID, workspace.KindClaim, s.name, m); err != nil {
		return "", err
	}
	return path.Join(workspace.TaskDir(taskID), s.name), nil
}

// connectStore is connect over a store of the caller's.
func connectStore(t *testing.T, st workspace.Store, opt Options) *mcp.ClientSession {
	t.Helper()
	s, err := New(st, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	st2, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(context.Background(), st2, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// TestVerdictReusedName: a claim dropped under a marker name the journal
// holds already is refused by the daemon without a record; claim_subtask
// answers with that refusal at once — a tool error saying the name was
// used and as which seq, verdict refused — not with a marker gone
// missing or a verdict that did not come in time.
func TestVerdictReusedName(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	runDaemon(t, w)
	planner := connect(t, w, Options{TaskID: "t1", Agent: "planner"})
	reviewer := connect(t, w, Options{TaskID: "t1", Agent: "reviewer"})
	ask(t, planner, ToolWritePlan, map[string]any{"subtasks": []any{
		map[string]any{"id": "st_1", "description": "first"},
		map[string]any{"id": "st_2", "description": "second"},
	}}).expect(t, "write_plan", false, verdictApplied)
	ask(t, reviewer, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}).
		expect(t, "write_review", false, verdictApplied)

	reuser := connectStore(t, reusingStore{Store: w, name: ".claim.worker_1.same"}, Options{TaskID: "t1", Agent: "worker_1", VerdictWait: time.Minute})
	ask(t, reuser, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}).
		expect(t, "the first claim under the name", false, verdictWon, "Subtask 'st_1' is yours")
	ask(t, reuser, ToolClaimSubtask, map[string]any{"subtask_id": "st_2"}).
		expect(t, "a claim under the same name", true, verdictRefused,
			"refused your claim of subtask st_2: this marker name was already used (journaled as seq 3); write a new marker with a fresh name",
			"hint: call the tool again: each call drops its marker under a fresh name")
	st, err := w.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if sub := st.Subtasks["st_2"]; sub == nil || sub.Status != "pending" {
		t.Fatalf("st_2 after a claim under a reused name: %+v, want pending", sub)
	}
}
