package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/testbin"
	"github.com/workspaced/workspaced/workspace"
)

// TestVerdictClockSQLite checks the verdict rows' clock on SQLite (the
// harness's trigger): for each waiter the commit's time is after its
// claim's drop began (to SQLite's millisecond, which the clock cuts) and
// not after Wait returned. A clock that lags the commit (a file's coarse
// time), one that misses a commit (a stamp left from the one before) or
// one off by a time zone fails it.
func TestVerdictClockSQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs a daemon")
	}
	bin, ctx := testbin.Must(t), context.Background()
	r, err := newServedSQLiteRig(ctx, filepath.Join(t.TempDir(), "clock.db"), []string{bin, "--root"})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	defer r.close()
	const task, waiters = "clock", 12
	if err := r.prepareOutputs(ctx, task, 20, 0); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	src, ok := workspace.As[workspace.VerdictSource](r.st)
	if !ok {
		t.Fatal("SQLite's store gives no verdicts")
	}
	for i := range waiters {
		w, err := r.waitVerdict(ctx, src, task, fmt.Sprintf("waiter_%d", i), fmt.Sprintf("st_%d", i+1))
		if err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		if w.committed.Before(w.dropped.Truncate(time.Millisecond)) || w.committed.After(w.heard) {
			t.Errorf("waiter %d: committed at %s, want it between the drop's start %s (to the millisecond) and the verdict heard %s",
				i, w.committed.UTC().Format(time.RFC3339Nano), w.dropped.UTC().Format(time.RFC3339Nano), w.heard.UTC().Format(time.RFC3339Nano))
		}
	}
}
