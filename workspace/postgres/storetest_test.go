package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestConformance runs the suite every workspace.Store passes against a
// fresh PostgreSQL workspace for each part; its single writer is this
// package's Commit, run under the lease as serve runs it.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	epochs := map[*Store]int64{}
	open := func(t *testing.T) workspace.Store {
		s, _ := newStore(t)
		return s
	}
	apply := func(t *testing.T, st workspace.Store) {
		t.Helper()
		s := st.(*Store)
		mu.Lock()
		epoch, ok := epochs[s]
		if !ok {
			epoch = lead(t, s, "storetest")
			epochs[s] = epoch
		}
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ids, err := s.waitingTasks(ctx)
		if err != nil {
			t.Fatalf("tasks with markers waiting: %v", err)
		}
		for _, id := range ids {
			commitAll(t, s, id, epoch)
		}
	}
	storetest.Run(t, open, storetest.Hooks{Apply: apply})
}
