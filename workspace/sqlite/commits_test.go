package sqlite

import (
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestCommitsHearsOtherProcesses: every waiter of Commits hears each
// commit of another store's connections (the hub's own poll is an hour
// away), through one shared watch that ends with the last waiter and
// starts again with the next.
func TestCommitsHearsOtherProcesses(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	agent, err := Open(t.Context(), root) // another process's connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	storetest.Commits(t, s, "", func(i int) {
		if _, err := agent.CreateTask(t.Context(), workspace.NewTaskRequest{ID: fmt.Sprintf("t%d", i), Description: "heard", SubmittedBy: "test"}); err != nil {
			t.Fatal(err)
		}
	}, s.hub.Waiting)
}
