package ops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestSymlinkedTaskRefused: a task reached through a symlink in tasks/
// is refused by every operation, naming the link, and nothing of the task
// it leads to changes.
func TestSymlinkedTaskRefused(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "v1")
	if _, err := w.NewThread(context.Background(), workspace.NewThreadRequest{TaskID: "v1", ID: "th1", From: "a", To: "b", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v1", filepath.Join(w.Dir(), "tasks", "alias")); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(w.Dir(), "tasks", "v1")
	before := listing(t, v1)
	ops := []struct {
		name string
		call func() error
	}{
		{"Chain", func() error { _, err := Over(w).Chain(t.Context(), "alias", "th1"); return err }},
		{"Preamble", func() error {
			_, err := Over(w).Preamble(t.Context(), "th1", PreambleOptions{TaskID: "alias"})
			return err
		}},
		{"Context", func() error {
			_, err := Over(w).Context(t.Context(), "th1", ContextOptions{TaskID: "alias"})
			return err
		}},
		{"SystemContext", func() error { _, err := Over(w).SystemContext(t.Context(), "a", "alias"); return err }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			err := op.call()
			if !errors.Is(err, workspace.ErrUnsafe) || !strings.Contains(err.Error(), "tasks/alias is a symlink") {
				t.Fatalf("%s on tasks/alias → v1: err = %v, want a refusal naming the symlink", op.name, err)
			}
			if workspace.HintOf(err) == "" {
				t.Errorf("%s: no hint", op.name)
			}
		})
	}
	if after := listing(t, v1); after != before {
		t.Fatalf("tasks/v1 changed through the link:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
