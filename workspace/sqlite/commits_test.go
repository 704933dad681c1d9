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

// TestCommitsHearsTheDaemonsOwnCommits: a waiter in the daemon's own
// process (an API's or MCP's claim with wait, the panel's watch) hears
// the commits of the daemon's commit connection, which are what it
// waits for: the hub's own poll is an hour away, and each commit must
// wake it.
func TestCommitsHearsTheDaemonsOwnCommits(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	storetest.Commits(t, s, "", func(i int) {
		if err := s.writeSynced(t.Context(), func(tx wtx) error {
			_, err := tx.ExecContext(t.Context(), "INSERT INTO files (path, body) VALUES (?, '{}')", fmt.Sprintf("own%d.json", i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}, s.hub.Waiting)
}
