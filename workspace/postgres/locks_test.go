package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

func TestLockRefusesAnotherUntilReleased(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx := context.Background()
	tune(s, func(st *workspace.Settings) { st.LockTimeout = workspace.Duration(100 * time.Millisecond) })
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "locks"}); err != nil {
		t.Fatal(err)
	}
	// Another process: a store of its own, its own pool.
	other, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tune(other, func(st *workspace.Settings) { st.LockTimeout = workspace.Duration(100 * time.Millisecond) })

	l, err := s.LockTaskNamed(ctx, "t1", "deploy", "agent_a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release() // a failed test gives the connection back, so Close returns
	_, err = other.LockTaskNamed(ctx, "t1", "deploy", "agent_b")
	var te *locking.TimeoutError
	if !errors.Is(err, workspace.ErrLocked) || !errors.As(err, &te) || te.Holder == nil || te.Holder.Agent != "agent_a" {
		t.Fatalf("a held lock taken again: %v, want ErrLocked naming agent_a", err)
	}
	// The same process is refused too: the lock is the connection's.
	if _, err := s.LockTaskNamed(ctx, "t1", "deploy", "agent_c"); !errors.Is(err, workspace.ErrLocked) {
		t.Fatalf("a held lock taken again by its own store: %v, want ErrLocked", err)
	}
	whole, err := other.LockTaskNamed(ctx, "t1", "", "agent_b")
	if err != nil {
		t.Fatalf("the task's lock is another lock: %v", err)
	}
	defer whole.Release()
	infos, err := other.Locks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, li := range infos {
		if li.Held && li.Holder != nil {
			held[li.TaskID+"/"+li.Lock] = li.Holder.Agent
		}
	}
	if held["t1/deploy"] != "agent_a" || held["t1/task"] != "agent_b" {
		t.Fatalf("locks held: %v (from %+v)", held, infos)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("a second release: %v", err)
	}
	l2, err := other.LockTaskNamed(ctx, "t1", "deploy", "agent_b")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	defer l2.Release()
	if err := whole.Release(); err != nil {
		t.Fatal(err)
	}
	infos, _ = s.Locks(ctx)
	for _, li := range infos {
		if li.Lock == "task" && li.Held {
			t.Fatalf("released task lock still held: %+v", li)
		}
		if li.Lock == "deploy" && (!li.Held || li.Holder.Agent != "agent_b") {
			t.Fatalf("deploy listed as %+v, want held by agent_b", li)
		}
	}

	if _, err := s.LockTaskNamed(ctx, "t_none", "deploy", "a"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("lock in a missing task: %v", err)
	}
	if _, err := s.LockTaskNamed(ctx, "t1", "../x", "a"); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("lock with a bad name: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	tune(s, func(st *workspace.Settings) { st.LockTimeout = workspace.Duration(time.Minute) })
	if _, err := s.LockTaskNamed(short, "t1", "deploy", "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait ended by its context: %v", err)
	}
}

func TestLockOfADeadSessionIsFree(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	tune(s, func(st *workspace.Settings) { st.LockTimeout = workspace.Duration(100 * time.Millisecond) })
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "locks"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.LockTaskNamed(ctx, "t1", "deploy", "agent_a")
	if err != nil {
		t.Fatal(err)
	}
	// The holder's connection dies (its process was killed).
	pid := l.(*advisoryLock).conn.Conn().PgConn().PID()
	if _, err := s.pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	tune(s, func(st *workspace.Settings) { st.LockTimeout = workspace.Duration(time.Minute) })
	l2, err := s.LockTaskNamed(ctx, "t1", "deploy", "agent_b")
	if err != nil {
		t.Fatalf("the lock of a dead session: %v", err)
	}
	l2.Release()
	_ = l.Release() // through a dead connection: gives it back closed
}

// tune changes the settings of s.
func tune(s *Store, change func(*workspace.Settings)) {
	st := s.Settings()
	change(&st)
	s.SetSettings(st)
}
