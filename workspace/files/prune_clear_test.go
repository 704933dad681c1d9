package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
)

// TestRenameClearing checks that a task directory reaches its new name
// whatever a failed earlier step left there, and that the source is never
// lost.
func TestRenameClearing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// dst prepares what stands at the destination before the rename.
		dst func(t *testing.T, path string)
	}{
		{"absent", func(t *testing.T, path string) {}},
		{"empty directory", func(t *testing.T, path string) {
			mustMkdir(t, path)
		}},
		{"directory with files", func(t *testing.T, path string) {
			mustMkdir(t, filepath.Join(path, "outputs"))
			mustWrite(t, filepath.Join(path, "outputs", "st_1.json"), "{}")
			mustWrite(t, filepath.Join(path, "plan.json"), "{}")
		}},
		{"file", func(t *testing.T, path string) {
			mustWrite(t, path, "stray")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mustMkdir(t, filepath.Join(dir, "tasks", "t1"))
			mustWrite(t, filepath.Join(dir, "tasks", "t1", "task.json"), `{"id": "t1"}`)
			tc.dst(t, filepath.Join(dir, "tasks", trashPrefix+"t1"))
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()

			if err := renameClearing(root, "tasks/t1", "tasks/"+trashPrefix+"t1"); err != nil {
				t.Fatalf("renameClearing: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "tasks", "t1")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("source still there: %v", err)
			}
			got := snapshot(t, filepath.Join(dir, "tasks", trashPrefix+"t1"))
			if len(got) != 1 || got["task.json"].Content != `{"id": "t1"}` {
				t.Errorf("destination holds %v, want only the moved task.json", got)
			}
		})
	}
}

// TestRenameClearingKeepsSourceOnOtherErrors checks that an error not
// caused by the destination (a missing source) deletes nothing.
func TestRenameClearingKeepsSourceOnOtherErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustMkdir(t, filepath.Join(dir, "tasks", trashPrefix+"t1"))
	mustWrite(t, filepath.Join(dir, "tasks", trashPrefix+"t1", "keep"), "x")
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := renameClearing(root, "tasks/t1", "tasks/"+trashPrefix+"t1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("renameClearing of a missing source: got %v, want not-exist", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tasks", trashPrefix+"t1", "keep")); err != nil {
		t.Errorf("destination was cleared although the source is missing: %v", err)
	}
}

// TestRemoveTree checks that a tree is deleted whole, and that a missing
// tree is no error.
func TestRemoveTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTask(t, dir, taskSpec{id: "t1", status: vocab.StatusCompleted, completedAt: at(50 * retention.Day)})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := removeTree(root, "tasks/t1"); err != nil {
		t.Fatalf("removeTree: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tasks", "t1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tree still there: %v", err)
	}
	if err := removeTree(root, "tasks/t1"); err != nil {
		t.Errorf("removeTree of a missing tree: %v", err)
	}
}

func mustMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}
