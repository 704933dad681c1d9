package main

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
)

// TestMCPVerdictsPostgres: on a postgres:// root served by `workspaced
// serve`, the tools that drop markers over `mcp --http` answer with the
// daemon's verdict: the plan and its review applied, a claim won, a
// claim of a subtask another holds lost as a tool error naming the
// holder, a done report of it refused, the holder's done report applied.
func TestMCPVerdictsPostgres(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	w := &ws{clitest.At(t, p.Root)}
	w.Task("t1")
	p.serve()
	srv := w.mcpHTTP()
	session := func(agent, may string) *mcp.ClientSession {
		cs, err := clitest.ConnectMCP(t, srv.url, w.addToken("--agent", agent, "--task", "t1", "--may", may))
		if err != nil {
			t.Fatalf("connect as %s: %v", agent, err)
		}
		return cs
	}
	planner, reviewer := session("planner", "plan"), session("reviewer", "review")
	w1, w2 := session("w1", "claim,done"), session("w2", "claim,done")
	call := func(cs *mcp.ClientSession, tool string, args map[string]any, isError bool, verdict, want string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		got, _ := res.StructuredContent.(map[string]any)
		if res.IsError != isError || got["verdict"] != verdict || !strings.Contains(text, want) {
			t.Errorf("%s %v: isError %v, %v; want %v, verdict %s, %q:\n%s", tool, args, res.IsError, got, isError, verdict, want, text)
		}
	}
	call(planner, mcpserver.ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "s0", "description": "work"}, map[string]any{"id": "s1", "description": "more"}}},
		false, "applied", "The workspace daemon accepted it")
	call(reviewer, mcpserver.ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}, false, "applied", `status "executing"`)
	call(w1, mcpserver.ToolClaimSubtask, map[string]any{"subtask_id": "s0"}, false, "won", "Subtask 's0' is yours")
	call(w2, mcpserver.ToolClaimSubtask, map[string]any{"subtask_id": "s0"}, true, "lost", "agent w1 holds it")
	call(w2, mcpserver.ToolSignalDone, map[string]any{"subtask_id": "s0", "output": map[string]any{"summary": "not mine"}}, true, "refused", "refused your done report")
	call(w1, mcpserver.ToolSignalDone, map[string]any{"subtask_id": "s0", "output": map[string]any{"summary": "done"}}, false, "applied", "subtask s0 is completed")
}
