package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestCommitsHearsOtherProcesses: every waiter of Commits hears each
// commit of another store's connections (the hub's own poll is an hour
// away), through one shared watch that ends with the last waiter and
// starts again with the next.
func TestCommitsHearsOtherProcesses(t *testing.T) {
	s, root := newStore(t)
	agent, err := Open(t.Context(), root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for round := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		a, err := s.Commits(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Commits(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		awaitCommit(t, a, "a at the start")
		awaitCommit(t, b, "b at the start")
		for i := range 5 {
			drain(a, b) // a broadcast of the watch's first look
			id := fmt.Sprintf("t%d_%d", round, i)
			if _, err := agent.CreateTask(t.Context(), workspace.NewTaskRequest{ID: id, Description: "heard", SubmittedBy: "test"}); err != nil {
				t.Fatal(err)
			}
			awaitCommit(t, a, "a after "+id)
			awaitCommit(t, b, "b after "+id)
		}
		cancel()
		awaitNoWaiters(t, s)
	}
}

// awaitCommit waits for a value on c.
func awaitCommit(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute):
		t.Fatalf("%s: no commit heard within a minute", what)
	}
}

func drain(cs ...<-chan struct{}) {
	for _, c := range cs {
		select {
		case <-c:
		default:
		}
	}
}

// awaitNoWaiters waits until the hub has no waiter left.
func awaitNoWaiters(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.hub.mu.Lock()
		n := len(s.hub.subs)
		s.hub.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters left a minute after their contexts ended", n)
		}
	}
}
