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

// TestCleanupPrunesHistory: cleanup keeps --history-keep earlier versions
// of each memory entry and says how many it removed; a dry run only says;
// a negative bound is refused as a usage error.
func TestCleanupPrunesHistory(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	for _, v := range []string{"1", "2", "3", "4"} {
		w.Ok("memory", "store", "--scope", "global", "--key", "k", "--value", v, "--agent", "agent_a")
	}
	if out := w.Ok("cleanup", "--dry-run", "--history-keep", "1"); !strings.Contains(out, "memory history: would remove 2 earlier version(s) past the 1 kept of each entry") {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := w.Ok("cleanup", "--history-keep", "1"); !strings.Contains(out, "memory history: removed 2 earlier version(s) past the 1 kept of each entry") {
		t.Fatalf("cleanup:\n%s", out)
	}
	var kept []workspace.Entry
	clitest.Decode(t, w.Ok("memory", "history", "--scope", "global", "--key", "k", "--json"), &kept)
	if len(kept) != 1 || string(kept[0].Value) != "3" {
		t.Fatalf("kept after cleanup: %+v", kept)
	}
	if r := w.Fails(exitUsage, "history_keep -1 is negative", "cleanup", "--history-keep", "-1"); !strings.Contains(r.Stderr, "hint: give --history-keep") {
		t.Errorf("the refusal's hint does not say what to give: %s", r.Stderr)
	}
}
