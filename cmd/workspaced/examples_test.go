package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// The sample tree the README walks through must stay valid, and must show
// what it claims to: a task part-way through and an ARC task with env data.
func TestExampleWorkspaceValidates(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "examples", "workspace")
	out, err := clitest.Command("validate", root).CombinedOutput()
	if err != nil {
		t.Fatalf("workspaced validate %s: %v\n%s", root, err, out)
	}
	if !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("validate printed %q, want ok N files", out)
	}
	for _, want := range []string{
		"tasks/task_rest_auth/plans/plan_v1.json",
		"tasks/task_rest_auth/reviews/plan_v1.json",
		"tasks/task_rest_auth/outputs/st_1.json",
		"tasks/task_rest_auth/events.log",
		"tasks/task_arc_001/env/arc_task.json",
		"tasks/task_arc_001/env/observed_patterns.json",
		"config/agents.json",
		"friction/friction.json",
	} {
		if _, err := os.Stat(filepath.Join(root, want)); err != nil {
			t.Errorf("sample tree lacks %s: %v", want, err)
		}
	}
	// The state is what the journal says: rebuild reproduces it.
	rb, err := clitest.Command("--root", root, "state", "rebuild", "--task", "task_rest_auth").CombinedOutput()
	if err != nil {
		t.Fatalf("state rebuild: %v\n%s", err, rb)
	}
	if !strings.Contains(string(rb), "matches the journal") {
		t.Fatalf("state rebuild differs from the committed state.json:\n%s", rb)
	}
	show, err := clitest.Command("--root", root, "state", "show", "--task", "task_rest_auth", "--json").Output()
	if err != nil {
		t.Fatalf("state show: %v", err)
	}
	for _, want := range []string{`"revision_count": 1`, `"plan_version": 2`, `"status": "executing"`} {
		if !strings.Contains(string(show), want) {
			t.Errorf("state of task_rest_auth lacks %s", want)
		}
	}
}
