package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/testbin"
	"github.com/workspaced/workspaced/workspace"
)

// TestVerdictClock checks the verdict rows' clock on the databases (the
// harness's trigger on the daemon's state writes): for each waiter the
// commit's time is after its claim's drop began (to the clock's
// resolution, which cuts it) and not after Wait returned. A clock that
// lags the commit (a file's coarse time), one that misses a commit (a
// stamp left from the one before) or one off by a time zone fails it.
func TestVerdictClock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs a daemon")
	}
	for _, tc := range []struct {
		name string
		// res is the clock's resolution: SQLite's 'now' is cut to the
		// millisecond, PostgreSQL's clock_timestamp() to the microsecond.
		res    time.Duration
		newRig func(t *testing.T, serve []string) (*rig, error)
	}{
		{"sqlite", time.Millisecond, func(t *testing.T, serve []string) (*rig, error) {
			return newServedSQLiteRig(context.Background(), filepath.Join(t.TempDir(), "clock.db"), serve)
		}},
		{"postgres", time.Microsecond, func(t *testing.T, serve []string) (*rig, error) {
			return newServedPGRig(context.Background(), pgtest.DB(t), serve)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin, ctx := testbin.Must(t), context.Background()
			r, err := tc.newRig(t, []string{bin, "--root"})
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
				t.Fatal("the store gives no verdicts")
			}
			for i := range waiters {
				w, err := r.waitVerdict(ctx, src, task, fmt.Sprintf("waiter_%d", i), fmt.Sprintf("st_%d", i+1))
				if err != nil {
					t.Fatalf("waiter %d: %v", i, err)
				}
				if w.committed.Before(w.dropped.Truncate(tc.res)) || w.committed.After(w.heard) {
					t.Errorf("waiter %d: committed at %s, want it between the drop's start %s (to %s) and the verdict heard %s",
						i, w.committed.UTC().Format(time.RFC3339Nano), w.dropped.UTC().Format(time.RFC3339Nano), tc.res, w.heard.UTC().Format(time.RFC3339Nano))
				}
			}
		})
	}
}
