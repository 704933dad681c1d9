package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestSymlinkedTaskCLI: a task id that names a symlink in tasks/ is
// refused by every command that takes a task, and status lists the link
// as skipped; the task it points to is untouched.
func TestSymlinkedTaskCLI(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("v1")
	if err := os.Symlink("v1", filepath.Join(w.Root, "tasks", "alias")); err != nil {
		t.Fatal(err)
	}
	before := w.Tree()
	for _, args := range [][]string{
		{"task", "show", "--task", "alias"},
		{"env", "store", "--task", "alias", "--key", "k", "--description", "d", "--value", "1"},
		{"env", "list", "--task", "alias"},
		{"claim", "--task", "alias", "--agent", "w1", "--subtask", "st_1"},
		{"events", "--task", "alias"},
		{"state", "show", "--task", "alias"},
		{"backup", "list", "--task", "alias"},
		{"lock", "--task", "alias", "--name", "n", "--", "true"},
		{"thread", "list", "--task", "alias"},
		{"task", "create", "--id", "alias", "--description", "d"},
	} {
		r := w.Run(args...)
		clitest.CheckFailure(t, r, exitFailure, "tasks/alias is a symlink", args)
		if !strings.Contains(r.Stderr, "\nhint: ") {
			t.Errorf("workspaced %q: no hint:\n%v", args, r)
		}
	}
	clitest.SameTree(t, before, w.Tree(), "commands naming tasks/alias")

	out := w.Ok("status")
	if !strings.Contains(out, "tasks: 1 ") || !strings.Contains(out, `skipped tasks/alias: is a symlink (to "v1")`) {
		t.Fatalf("status does not list the link as skipped:\n%s", out)
	}
	var s struct {
		Tasks   []struct{ ID string }
		Skipped []struct{ File, Reason string }
	}
	clitest.Decode(t, w.Ok("status", "--json"), &s)
	if len(s.Tasks) != 1 || s.Tasks[0].ID != "v1" || len(s.Skipped) != 1 || s.Skipped[0].File != "tasks/alias" {
		t.Fatalf("status --json: tasks %v, skipped %v", s.Tasks, s.Skipped)
	}
}
