package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/locking"
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

// A commit takes its task's lock through the task directory: the holder
// record names the daemon while it holds it, the lock is free after, and
// a lock file that is not a regular file (a symlink, a directory, a FIFO,
// which must not block the commit) is refused as unsafe, no marker taken.
func TestCommitTakesTheTaskLockInItsDirectory(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 3)
	lock := filepath.Join(dir, "tasks", "t1", ".locks", "task.lock")
	if held, h, err := locking.Held(lock); err != nil || held || h == nil || h.Agent != daemonAgent {
		t.Fatalf("after a commit: held %v, holder %+v, %v; want free, last held by %s", held, h, err, daemonAgent)
	}
	for _, plant := range []struct {
		kind string
		make func() error
	}{
		{"symlink", func() error { return os.Symlink("elsewhere", lock) }},
		{"directory", func() error { return os.Mkdir(lock, 0o755) }},
		{"FIFO", func() error { return syscall.Mkfifo(lock, 0o644) }},
	} {
		if err := os.Remove(lock); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := plant.make(); err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WriteClaim(t.Context(), "t1", "agent_1", "st_1"); err != nil {
			t.Fatal(err)
		}
		a, err := d.taskOf("t1").Commit(t.Context(), workspace.CommitRequest{Max: testMax})
		if !errors.Is(err, workspace.ErrUnsafe) || !strings.Contains(err.Error(), "lock file is a "+plant.kind) || a.Taken != 0 {
			t.Errorf("commit with a %s for its lock file: took %d, %v; want ErrUnsafe naming it, nothing taken", plant.kind, a.Taken, err)
		}
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		if a := process(t, d, "t1"); a.Taken != 1 {
			t.Errorf("after the %s was removed: took %d, want the claim", plant.kind, a.Taken)
		}
	}
}
