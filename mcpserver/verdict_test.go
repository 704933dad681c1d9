package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// runDaemon runs the daemon on w's root in this process until the test
// ends, or until the returned stop is called; it returns once the daemon
// has scanned the tree and watches it.
func runDaemon(t *testing.T, w *files.Store) (stop func()) {
	t.Helper()
	return servetest.StartTree(t, w.Dir(), 0, daemon.Config{}).Stop
}

// answer is a tool's answer as a client reads it.
type answer struct {
	text    string
	isError bool
	verdict string // structuredContent's verdict
}

func ask(t *testing.T, cs *mcp.ClientSession, tool string, args any) answer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	a := answer{isError: res.IsError}
	for _, c := range res.Content {
		a.text += c.(*mcp.TextContent).Text
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		a.verdict, _ = m["verdict"].(string)
	}
	return a
}

// expect fails the test unless a is (or is not) an error with verdict
// whose text holds every want.
func (a answer) expect(t *testing.T, what string, isError bool, verdict string, want ...string) {
	t.Helper()
	if a.isError != isError || a.verdict != verdict {
		t.Errorf("%s: isError %v, verdict %q; want %v, %q:\n%s", what, a.isError, a.verdict, isError, verdict, a.text)
	}
	for _, w := range want {
		if !strings.Contains(a.text, w) {
			t.Errorf("%s: the answer lacks %q:\n%s", what, w, a.text)
		}
	}
}

// TestVerdicts: with a daemon serving the tree, a tool that drops a
// marker answers with the daemon's verdict — the plan and the review
// applied, a claim won, a claim of a subtask another holds, of a blocked
// one or of none lost as a tool error saying why, a done report of a
// subtask not one's own refused — and with no daemon, that the marker is
// queued, which is no error.
func TestVerdicts(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	stop := runDaemon(t, w)
	planner := connect(t, w, Options{TaskID: "t1", Agent: "planner"})
	reviewer := connect(t, w, Options{TaskID: "t1", Agent: "reviewer"})
	w1 := connect(t, w, Options{TaskID: "t1", Agent: "worker_1"})
	w2 := connect(t, w, Options{TaskID: "t1", Agent: "worker_2"})

	ask(t, planner, ToolWritePlan, map[string]any{"subtasks": []any{
		map[string]any{"id": "st_1", "description": "first"},
		map[string]any{"id": "st_2", "description": "second", "dependencies": []string{"st_1"}},
	}}).expect(t, "write_plan", false, verdictApplied, "Wrote plan.json version 1", "The workspace daemon accepted it")
	ask(t, reviewer, ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}).
		expect(t, "write_review", false, verdictApplied, "The workspace daemon accepted it")

	ask(t, w1, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}).
		expect(t, "the first claim", false, verdictWon, "Subtask 'st_1' is yours", "signal_done")
	ask(t, w2, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}).
		expect(t, "a claim of a subtask another holds", true, verdictLost, "refused your claim of subtask st_1", "agent worker_1 holds it")
	ask(t, w2, ToolClaimSubtask, map[string]any{"subtask_id": "st_2"}).
		expect(t, "a claim of a blocked subtask", true, verdictLost, "refused your claim of subtask st_2", "blocked")
	ask(t, w2, ToolClaimSubtask, map[string]any{"subtask_id": "st_9"}).
		expect(t, "a claim of no subtask", true, verdictNotFound, "refused your claim of subtask st_9", "get_plan lists the subtasks")
	ask(t, w2, ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"summary": "not mine"}}).
		expect(t, "a done report of another's subtask", true, verdictRefused, "refused your done report")
	ask(t, w1, ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"summary": "done"}}).
		expect(t, "the worker's done report", false, verdictApplied, "The workspace daemon accepted it: subtask st_1 is completed")

	// No daemon: the claim waits for one, and says so.
	stop()
	ask(t, w2, ToolClaimSubtask, map[string]any{"subtask_id": "st_2"}).
		expect(t, "a claim with no daemon", false, verdictQueued, "No workspace daemon serves this workspace", "Do not start the work")
}
