package main

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestMemoryHistoryCLI: after another agent overwrites a global memory
// key, 'memory history' prints the earlier author and value; --json the
// kept entries; a key never replaced has none; a task's env keeps none.
func TestMemoryHistoryCLI(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("memory", "store", "--scope", "global", "--key", "plan", "--description", "the plan", "--value", `{"by":"a"}`, "--agent", "agent_a")
	w.Ok("memory", "store", "--scope", "global", "--key", "plan", "--description", "mine", "--value", `{"by":"b"}`, "--agent", "agent_b")
	out := w.Ok("memory", "history", "--scope", "global", "--key", "plan")
	if !strings.Contains(out, "agent_a") || !strings.Contains(out, `{"by":"a"}`) || strings.Contains(out, "agent_b") {
		t.Fatalf("history:\n%s", out)
	}
	var kept []workspace.Entry
	clitest.Decode(t, w.Ok("memory", "history", "--scope", "global", "--key", "plan", "--json"), &kept)
	if len(kept) != 1 || kept[0].StoredBy != "agent_a" || kept[0].Version != 1 || kept[0].ShortDescription != "the plan" {
		t.Fatalf("--json: %+v", kept)
	}
	if out := w.Ok("memory", "history", "--scope", "global", "--key", "never"); !strings.Contains(out, "no earlier versions") {
		t.Fatalf("a key never replaced: %s", out)
	}
	w.Fails(exitUsage, "missing --key", "memory", "history", "--scope", "global")
}
