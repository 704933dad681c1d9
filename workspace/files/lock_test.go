package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// Taking the lock of a task whose directory is gone fails as not found
// and never makes the directory again.
func TestLockTaskOfRemovedTask(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	if _, err := w.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t1", Description: "x"}); err != nil {
		t.Fatal(err)
	}
	l, err := w.LockTask(context.Background(), "t1", "daemon")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if err := os.RemoveAll(filepath.Join(w.Dir(), "tasks", "t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.LockTask(context.Background(), "t1", "daemon"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("LockTask of a removed task: %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(filepath.Join(w.Dir(), "tasks", "t1")); !os.IsNotExist(err) {
		t.Fatalf("LockTask made the removed task's directory again: %v", err)
	}
}
