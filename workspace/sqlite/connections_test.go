package sqlite

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestReadsOpenNoWriteConnection: a store opened and read (a command such
// as status) has opened one connection, a read's, each opening reading
// the whole schema; its first write opens the write connection, and
// further reads and writes open no more.
func TestReadsOpenNoWriteConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opened := func() (reads, writes, commits int) {
		return s.rdb.Stats().OpenConnections, s.db.Stats().OpenConnections, s.cdb.Stats().OpenConnections
	}
	if _, err := s.ReadStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if r, w, c := opened(); r != 1 || w != 0 || c != 0 {
		t.Fatalf("opened and read: %d read, %d write and %d commit connections, want 1, 0, 0", r, w, c)
	}
	for i := range 3 {
		if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t" + string(rune('2'+i)), Description: "d"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if r, w, c := opened(); r != 1 || w != 1 || c != 0 {
		t.Fatalf("after writes and reads in turn: %d read, %d write and %d commit connections, want 1, 1, 0", r, w, c)
	}
}

// TestInitUpToDateWritesNothing: Init of a database already migrated
// applies nothing and takes no write: it opens no write connection.
func TestInitUpToDateWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root := newStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, n, err := Init(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w, c := s.db.Stats().OpenConnections, s.cdb.Stats().OpenConnections; n != 0 || w != 0 || c != 0 {
		t.Fatalf("Init of a migrated database: %d migrations applied, %d write and %d commit connections opened, want none", n, w, c)
	}
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpenRead is a command that reads: the workspace opened, its
// status read, the store closed. Beside the time it reports the process's
// CPU (user and system) per operation, cpu-ns/op, which a busy machine
// sways less.
func BenchmarkOpenRead(b *testing.B) {
	ctx := context.Background()
	s, root := newStore(b)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		s, err := Open(ctx, root)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.ReadStatus(ctx); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkInitUpToDate is Init of a workspace already migrated, and its
// close, as `workspaced init` run again; cpu-ns/op as in BenchmarkOpenRead.
func BenchmarkInitUpToDate(b *testing.B) {
	ctx := context.Background()
	s, root := newStore(b)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		s, _, err := Init(ctx, root)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
