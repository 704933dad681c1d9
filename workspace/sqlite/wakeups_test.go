package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestWakeupsHearEveryCommit: with the poll out of the way (an hour),
// every write of another connection wakes the daemon once it is
// committed. A write is heard when its frames reach the WAL, before the
// commit is visible; a look made only then would miss it until the poll.
func TestWakeupsHearEveryCommit(t *testing.T) {
	t.Parallel()
	_, wk, agent := wakeRig(t)
	ctx := t.Context()
	for i := range 20 {
		id := fmt.Sprintf("t%d", i)
		if _, err := agent.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "wake", SubmittedBy: "test"}); err != nil {
			t.Fatal(err)
		}
		// A task with no state yet is one the daemon must look at.
		awaitWake(t, wk, id)
	}
}

// wakeRig is a store, its daemon's wake-ups with the poll an hour away,
// and the same database opened again as another process's would be.
func wakeRig(t *testing.T) (*Store, workspace.Wakeups, *Store) {
	t.Helper()
	s, root := newStore(t)
	wk, err := s.Wakeups(t.Context(), workspace.WakeOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Close() })
	agent, err := Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	return s, wk, agent
}

// awaitWake waits for a wake-up naming task.
func awaitWake(t *testing.T, wk workspace.Wakeups, task string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case w, ok := <-wk.C():
			if !ok {
				t.Fatal("wake-ups closed")
			}
			if w.Err != nil {
				t.Log(w.Err) // the source got over it and goes on
			}
			if w.Task == task {
				return
			}
		case <-deadline:
			t.Fatalf("no wake-up for %s within a minute of its commit, with the poll an hour away", task)
		}
	}
}

// TestDataVersionIgnoresTheDaemonsCommits: the wake-up loop's data
// version stays as it was over a commit of the daemon's own connection
// and moves over another connection's, so that the daemon's own commit
// starts no look for waiting tasks.
func TestDataVersionIgnoresTheDaemonsCommits(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx := t.Context()
	ver := s.dataVersions(ctx, true)
	defer ver.close()
	v0 := ver.read()
	if v0 < 0 {
		t.Fatal("data version not read")
	}
	if err := s.writeSynced(ctx, func(tx wtx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES ('own.json', '{}')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if v1 := ver.read(); v1 != v0 {
		t.Fatalf("data version %d after the daemon's own commit, was %d: want it unmoved", v1, v0)
	}
	agent, err := Open(ctx, root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.CreateTask(ctx, workspace.NewTaskRequest{ID: "t", Description: "wake", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	v2 := ver.read()
	if v2 == v0 || v2 < 0 {
		t.Fatalf("data version %d after another connection's commit, was %d: want it moved", v2, v0)
	}
	// A write of this store's other writer (an API's, in the daemon's
	// process) is another connection's too.
	if err := s.write(ctx, func(tx wtx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES ('api.json', '{}')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if v3 := ver.read(); v3 == v2 || v3 < 0 {
		t.Fatalf("data version %d after the store's other writer committed, was %d: want it moved", v3, v2)
	}
}

// TestWakeupsHearWritesAroundTheDaemonsCommits: writes of another
// connection made while the daemon commits, or just as its commit ends,
// each wake the daemon, with the poll an hour away: what the loop heard
// during a commit of the daemon's is read at the commit's end, and a
// write begun as it ended is followed after.
func TestWakeupsHearWritesAroundTheDaemonsCommits(t *testing.T) {
	t.Parallel()
	s, wk, agent := wakeRig(t)
	ctx := t.Context()
	for i := range 40 {
		id := fmt.Sprintf("t%d", i)
		commit := func() error {
			return s.writeSynced(ctx, func(tx wtx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO files (path, body) VALUES (?, '{}')", fmt.Sprintf("own%d.json", i))
				return err
			})
		}
		write := func() error {
			_, err := agent.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "wake", SubmittedBy: "test"})
			return err
		}
		if i%2 == 1 { // the agent's write begun first, then the daemon's
			commit, write = write, commit
		}
		first := make(chan error, 1)
		go func() { first <- commit() }()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		awaitWake(t, wk, id)
	}
}
