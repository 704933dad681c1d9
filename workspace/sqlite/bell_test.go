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
// log (its directory unwatched, its poll an hour away) reads a commit
// the daemon rings for once it rings, and not before. Each round starts
// a loop of its own: after a bell the loop follows for a while (it looks
// again as after any write heard), and a commit made in that follow may
// be seen without a bell of its own.
func TestBellWakesAWaiterAtOnce(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	waiter, err := Open(t.Context(), root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	s.bell.ring(s.path) // the file, as a daemon makes it
	for i := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			t.Fatal(err)
		}
		looks := make(chan int, 100) // the rows each look saw
		done := make(chan struct{})
		go func() {
			defer close(done)
			waiter.loop(ctx, fw, time.Hour, false, func(err error) {
				if err != nil {
					t.Error(err)
				}
				var n int
				if err := waiter.rdb.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE path LIKE 'own%'").Scan(&n); err != nil && ctx.Err() == nil {
					t.Error(err)
				}
				looks <- n
			})
		}()
		if n := <-looks; n != i { // the first look, at the start
			t.Fatalf("round %d: the first look saw %d commits, want %d", i, n, i)
		}
		if err := s.writeSynced(ctx, func(tx wtx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES (?, '{}')", fmt.Sprintf("own%d.json", i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-looks:
			t.Fatalf("commit %d looked at before its bell (%d seen)", i, n)
		default:
		}
		s.bell.ring(s.path)
		select {
		case n := <-looks:
			if n != i+1 {
				t.Fatalf("commit %d: the look after its bell saw %d commits", i, n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("commit %d: no look within a minute of its bell", i)
		}
		cancel()
		<-done
		fw.Close()
	}
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
