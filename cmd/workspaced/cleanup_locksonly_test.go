package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCleanupTidiesLocksOnly: cleanup removes a task directory holding
// nothing but lock files and says so; a dry run only says it would.
func TestCleanupTidiesLocksOnly(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	gone := filepath.Join(w.Root, "tasks", "gone")
	if err := os.MkdirAll(filepath.Join(gone, ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, ".locks", "task.lock"), []byte(`{"pid": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.Run("validate"); r.Code != exitFailure || !strings.Contains(r.Stdout, "gone: (root): skipped: holds nothing but lock files") {
		t.Fatalf("validate does not report it:\n%v", r)
	}
	out := w.Ok("cleanup", "--dry-run")
	if !strings.Contains(out, "would remove       gone: holds nothing but lock files") {
		t.Fatalf("cleanup --dry-run:\n%s", out)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Fatalf("the dry run removed it: %v", err)
	}
	out = w.Ok("cleanup")
	if !strings.Contains(out, "removed            gone: holds nothing but lock files") || !strings.Contains(out, "1 kept, 0 summarized, 1 removed, 0 skipped") {
		t.Fatalf("cleanup:\n%s", out)
	}
	if _, err := os.Lstat(gone); !os.IsNotExist(err) {
		t.Fatalf("tasks/gone is still there: %v", err)
	}
	if got := w.Ok("validate"); got != "ok 5 files\n" {
		t.Fatalf("validate after cleanup printed %q", got)
	}
}
