package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// DefaultScaleWaiters claims are waited for one at a time at each size
// (the verdict rows).
const DefaultScaleWaiters = 30

// VerdictFigures are how soon a waiter hears the verdict on its claim:
// from the commit of the state that decides it to workspace.Wait's return,
// as `claim --wait`, MCP and the HTTP API wait.
type VerdictFigures struct {
	Waiters int     `json:"waiters"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

// verdictClock says where the verdict rows take a commit's time from.
const verdictClock = "verdict: commit → verdict heard; the commit's time is state.json's ctime on files (its rename into place; its mtime where ctime is not read), " +
	"the database's WAL file's mtime on SQLite (the commit's first frame written: the file's times read after the claim's drop, so that its next write is stamped to the nanosecond; a commit whose writes outlast a tick of the kernel's coarse clock is stamped anew with it, and then the figure is off by up to a tick), on PostgreSQL the server's clock_timestamp() at the write of the states row in the daemon's transaction (a trigger of the harness's), shortly before its COMMIT"

// scaleVerdict has waiters claim, one at a time, the subtasks first,
// first+1, ... of task (executing, nothing else in flight) through the
// store and wait for each verdict with workspace.Wait, from the state's
// journal_seq read before the drop, as the doors do.
func (r *rig) scaleVerdict(ctx context.Context, task string, first, waiters int) (VerdictFigures, error) {
	src, ok := workspace.As[workspace.VerdictSource](r.st)
	if !ok {
		return VerdictFigures{}, errors.New("bench: the store gives no verdicts")
	}
	r.cm.quiet.Store(true)
	defer r.cm.quiet.Store(false)
	lat := make([]time.Duration, 0, waiters)
	for i := range waiters {
		st, err := r.st.ReadState(ctx, task)
		if err != nil {
			return VerdictFigures{}, err
		}
		name, err := r.st.WriteClaim(ctx, task, fmt.Sprintf("waiter_%d", i), fmt.Sprintf("st_%d", first+i))
		if err != nil {
			return VerdictFigures{}, err
		}
		r.armClock()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		v, err := workspace.Wait(wctx, src, task, path.Base(name), st.JournalSeq)
		heard := time.Now()
		cancel()
		if err != nil {
			return VerdictFigures{}, err
		}
		if v.Verdict != workspace.VerdictWon {
			return VerdictFigures{}, fmt.Errorf("bench: claim %s: verdict %s (%s), not won", name, v.Verdict, v.Reason)
		}
		at, err := r.committedAt(ctx, task)
		if err != nil {
			return VerdictFigures{}, err
		}
		lat = append(lat, heard.Sub(at))
	}
	s := summarize("", lat, 0)
	return VerdictFigures{Waiters: waiters, P50: s.P50, P99: s.P99}, nil
}

// armClock readies the commit's clock after the claim's drop. On SQLite
// it reads the WAL file's times: a file's times move with the kernel's
// coarse clock (a tick is 4 ms at HZ=250) unless they were read since the
// last change, so without this read the daemon's commit, a millisecond
// after the claim's insert, often leaves the mtime the insert's and the
// verdict is timed from the claim. Read now, the first write after (the
// commit's first frame) stamps the file to the nanosecond.
func (r *rig) armClock() {
	if r.sq != nil {
		_, _ = os.Stat(r.sq.s.Path() + "-wal")
	}
}

// committedAt is when task's state was last committed (see verdictClock).
func (r *rig) committedAt(ctx context.Context, task string) (time.Time, error) {
	switch {
	case r.ws != nil:
		return renamedAt(filepath.Join(r.ws.Dir(), filepath.FromSlash(workspace.TaskDir(task)), "state.json"))
	case r.sq != nil:
		fi, err := os.Stat(r.sq.s.Path() + "-wal")
		if err != nil {
			return time.Time{}, fmt.Errorf("bench: the database's WAL file: %w", err)
		}
		return fi.ModTime(), nil
	case r.pg != nil:
		var at time.Time
		err := r.pg.s.Pool().QueryRow(ctx, "SELECT at FROM bench_commits WHERE task_id = $1", task).Scan(&at)
		return at, err
	}
	return time.Time{}, errors.New("bench: no clock for this store's commits")
}
