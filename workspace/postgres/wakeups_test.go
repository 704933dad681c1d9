package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A task created before the daemon's LISTEN took hold notified no one and
// has no marker for the poll to find: the look made once LISTEN holds
// names it, so its first state does not wait for the next full rescan.
func TestWakeupsHearTasksCreatedBeforeListen(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.PutTask(ctx, workspace.Task{ID: "early", Description: "made before anyone listened"}); err != nil {
		t.Fatal(err)
	}
	wk, err := s.Wakeups(ctx, workspace.WakeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	// The polls every second look for markers only: without the look
	// after LISTEN, nothing but the daemon's rescan would ever name it.
	deadline := time.After(30 * time.Second)
	for {
		select {
		case w := <-wk.C():
			if w.Err != nil {
				t.Fatalf("wake-up error: %v", w.Err)
			}
			if w.Task == "early" {
				return
			}
		case <-deadline:
			t.Fatal("the task made before LISTEN was never named: its first state would wait for the rescan")
		}
	}
}
