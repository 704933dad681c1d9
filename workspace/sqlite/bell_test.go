package sqlite

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

// TestBellWakesAWaiterAtOnce: a waiter's loop that hears nothing of the
// log (its directory unwatched, its poll an hour away) still reads each
// commit the daemon rings for, once it is visible, and only then.
func TestBellWakesAWaiterAtOnce(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiter, err := Open(ctx, root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	s.bell.ring(s.path) // the file, as a daemon makes it
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	looks := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		waiter.loop(ctx, fw, time.Hour, false, func(err error) {
			if err != nil {
				t.Error(err)
			}
			looks <- struct{}{}
		})
	}()
	<-looks // the first look, at the start
	for i := range 5 {
		if err := s.writeSynced(ctx, func(tx wtx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES (?, '{}')", fmt.Sprintf("own%d.json", i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-looks:
			t.Fatalf("commit %d looked at before its bell", i)
		default:
		}
		s.bell.ring(s.path)
		select {
		case <-looks:
		case <-time.After(time.Minute):
			t.Fatalf("commit %d: no look within a minute of its bell", i)
		}
	}
	cancel()
	<-done
}

// TestCommitterRingsTheBell: a commit that wrote rings the bell and
// wakes the waiters of the daemon's own process at once; a waiter of
// another process reads the commit as soon as it hears the bell.
func TestCommitterRingsTheBell(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t", Description: "bell", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := s.Commits(wctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	<-c // the first, at the start
	if _, err := s.WriteClaim(ctx, "t", "a1", "st_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Committer("t").Commit(ctx, workspace.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c:
	default:
		t.Fatal("the commit's waiters in its own process not woken when it returned")
	}
	fi, err := os.Stat(bellPath(s.path))
	if err != nil || fi.Size() != 1 {
		t.Fatalf("bell %v, %v: want one byte", fi, err)
	}
}
