package postgres

import (
	"strconv"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestCommitsHearsOtherConnections: the waiters of Commits for a task
// hear each commit that appends its events from another store's
// connections (notified, not polled: no poll runs), through one shared
// LISTEN that ends with the last waiter and starts again with the next.
func TestCommitsHearsOtherConnections(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	agent, err := Open(t.Context(), root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "heard", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	storetest.Commits(t, s, "t1", func(i int) {
		if err := agent.AppendEvent(t.Context(), workspace.Event{TaskID: "t1", Name: "test_event", Attrs: map[string]string{"i": strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
	}, s.hub.Waiting)
}
