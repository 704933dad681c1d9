package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestCommitsHearsOtherConnections: the waiters of Commits for a task
// hear each commit that appends its events from another store's
// connections (notified, not polled: no poll runs), through one shared
// LISTEN that ends with the last waiter and starts again with the next.
func TestCommitsHearsOtherConnections(t *testing.T) {
	s, root := newStore(t)
	agent, err := Open(t.Context(), root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "heard", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		a, err := s.Commits(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Commits(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		awaitCommit(t, a, "a at the start")
		awaitCommit(t, b, "b at the start")
		for i := range 5 {
			if err := agent.AppendEvent(t.Context(), workspace.Event{TaskID: "t1", Name: "test_event", Attrs: map[string]string{"i": string(rune('0' + i))}}); err != nil {
				t.Fatal(err)
			}
			awaitCommit(t, a, "a after an event")
			awaitCommit(t, b, "b after an event")
		}
		cancel()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			s.hub.mu.Lock()
			n := len(s.hub.subs)
			s.hub.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d waiters left a minute after their contexts ended", round, n)
			}
		}
	}
}

func awaitCommit(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute):
		t.Fatalf("%s: no commit heard within a minute", what)
	}
}
