// Package poll waits in tests for a condition that a daemon or another
// process makes true, with a deadline instead of a sleep.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Interval is how long Until sleeps between two calls of its condition.
const Interval = 10 * time.Millisecond

// Until calls cond every Interval until it holds, failing t after within
// with what it waited for and cond's last word on why not yet.
func Until(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", within, what, why)
		}
		time.Sleep(Interval)
	}
}

// StateReader reads a task's state: a *files.Store or a
// workspace.Store.
type StateReader interface {
	ReadState(ctx context.Context, id string) (workspace.State, error)
}

// State waits, as Until does, until task id's state satisfies cond, and
// returns that state.
func State(t testing.TB, within time.Duration, r StateReader, id string, cond func(workspace.State) bool) workspace.State {
	t.Helper()
	var st workspace.State
	Until(t, within, "the state of task "+id, func() (bool, string) {
		var err error
		st, err = r.ReadState(t.Context(), id)
		if err != nil {
			return false, err.Error()
		}
		return cond(st), fmt.Sprintf("status %s, phase %s, plan %s, journal_seq %d", st.Status, st.Phase, st.PlanStatus, st.JournalSeq)
	})
	return st
}
