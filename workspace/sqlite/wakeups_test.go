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
	s, root := newStore(t)
	ctx := t.Context()
	wk, err := s.Wakeups(ctx, workspace.WakeOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	agent, err := Open(ctx, root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for i := range 20 {
		id := fmt.Sprintf("t%d", i)
		if _, err := agent.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "wake", SubmittedBy: "test"}); err != nil {
			t.Fatal(err)
		}
		// A task with no state yet is one the daemon must look at.
		awaitWake(t, wk, id)
	}
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
