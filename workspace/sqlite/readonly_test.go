package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// erofs is the fault the ordinary open meets on a read-only filesystem.
var erofs = &faultErr{err: errors.New("unable to open database file (14)"), errno: syscall.EROFS}

// TestReadOnlyOpen: a database closed cleanly (no log left) opened as on
// a read-only filesystem serves every read with what was committed, says
// so in status, and refuses every write with the read_only fault. A
// writer's commits, still in its log, are read, not missed; once the
// filesystem is writable again the store writes as usual.
func TestReadOnlyOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}, workspace.StoreRequest{Key: "k", Description: "d", Value: []byte(`"v"`), Agent: "worker"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path() + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log is left after a clean close: %v", err)
	}
	var writable atomic.Bool
	ro, err := openImmutable(ctx, s.Path(), erofs, writable.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	st, err := ro.ReadStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].ID != "t1" || st.Fault == nil || st.Fault.Kind != workspace.FaultReadOnly || st.Fault.Hint == "" {
		t.Fatalf("status read-only: tasks %+v, fault %+v", st.Tasks, st.Fault)
	}
	if e, err := ro.GetEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}, "k"); err != nil || string(e.Value) != `"v"` {
		t.Fatalf("env get read-only: %+v, %v", e, err)
	}
	_, err = ro.CreateTask(ctx, workspace.NewTaskRequest{ID: "t2", Description: "d"})
	if workspace.FaultKind(err) != workspace.FaultReadOnly {
		t.Fatalf("a write to a read-only store: %v, want the read_only fault", err)
	}

	// A writer starts: its commits are in the log, and the read-only
	// store's next transaction reads them.
	w, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t3", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.GetTask(ctx, "t3"); err != nil {
		t.Fatalf("a read after a writer committed: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path() + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log is left after the writer's clean close: %v", err)
	}
	if _, err := ro.GetTask(ctx, "t3"); err != nil {
		t.Fatalf("an immutable read after the writer checkpointed: %v", err)
	}

	// Writable again: status says nothing of a fault, and writes go on.
	writable.Store(true)
	if st, err := ro.ReadStatus(ctx); err != nil || st.Fault != nil || len(st.Tasks) != 2 {
		t.Fatalf("status writable again: %d tasks, fault %+v, %v", len(st.Tasks), st.Fault, err)
	}
	if _, err := ro.CreateTask(ctx, workspace.NewTaskRequest{ID: "t4", Description: "d"}); err != nil {
		t.Fatalf("a write once the filesystem is writable again: %v", err)
	}
}

// TestReadOnlyOpenLogWithoutIndex: a log holding commits without its
// -shm cannot be read on a read-only filesystem; the open fails saying
// so, with the read-only fault, rather than read the database without
// them.
func TestReadOnlyOpenLogWithoutIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the open store's log is empty")
		}
		if err := os.WriteFile(dir+"/agents.db"+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := openImmutable(ctx, dir+"/agents.db", erofs, func() bool { return false })
	if err == nil {
		ro.Close()
		t.Fatal("opened a log with commits and no -shm as immutable")
	}
	if workspace.FaultKind(err) != workspace.FaultReadOnly || !strings.Contains(err.Error(), "agents.db-shm") {
		t.Fatalf("open: %v, want the read-only fault naming the missing -shm", err)
	}
}
