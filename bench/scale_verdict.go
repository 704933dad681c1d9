package bench

import (
	"context"
	"errors"
	"fmt"
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
const verdictClock = "verdict: commit → verdict heard; the commit's time is state.json's ctime on files (its rename into place; its mtime where ctime is not read); on SQLite and PostgreSQL the time of the daemon's write of the task's state row in its transaction (a trigger of the harness's), so the figure includes the rest of the transaction, its COMMIT and its sync: PostgreSQL's clock_timestamp(), to the microsecond; SQLite's 'now', to the millisecond, cut, so that a SQLite figure is longer than the verdict's by 0–1 ms (0.5 ms on average) and never shorter"

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
		w, err := r.waitVerdict(ctx, src, task, fmt.Sprintf("waiter_%d", i), fmt.Sprintf("st_%d", first+i))
		if err != nil {
			return VerdictFigures{}, err
		}
		lat = append(lat, w.heard.Sub(w.committed))
	}
	s := summarize("", lat, 0)
	return VerdictFigures{Waiters: waiters, P50: s.P50, P99: s.P99}, nil
}

// verdictTimes are one waiter's times: the claim's drop begun, the
// commit that decided it (committedAt) and the verdict heard.
type verdictTimes struct {
	dropped, committed, heard time.Time
}

// waitVerdict has agent claim sub of task through the store and waits for
// the verdict, which must be won.
func (r *rig) waitVerdict(ctx context.Context, src workspace.VerdictSource, task, agent, sub string) (verdictTimes, error) {
	var w verdictTimes
	st, err := r.st.ReadState(ctx, task)
	if err != nil {
		return w, err
	}
	w.dropped = time.Now()
	name, err := r.st.WriteClaim(ctx, task, agent, sub)
	if err != nil {
		return w, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	v, err := workspace.Wait(wctx, src, task, path.Base(name), st.JournalSeq)
	w.heard = time.Now()
	cancel()
	if err != nil {
		return w, err
	}
	if v.Verdict != workspace.VerdictWon {
		return w, fmt.Errorf("bench: claim %s: verdict %s (%s), not won", name, v.Verdict, v.Reason)
	}
	w.committed, err = r.committedAt(ctx, task)
	return w, err
}

// committedAt is when task's state was last committed (see verdictClock).
func (r *rig) committedAt(ctx context.Context, task string) (time.Time, error) {
	switch {
	case r.ws != nil:
		return renamedAt(filepath.Join(r.ws.Dir(), filepath.FromSlash(workspace.TaskDir(task)), "state.json"))
	case r.sq != nil:
		return r.sq.committedAt(ctx, task)
	case r.pg != nil:
		var at time.Time
		err := r.pg.s.Pool().QueryRow(ctx, "SELECT at FROM bench_commits WHERE task_id = $1", task).Scan(&at)
		return at, err
	}
	return time.Time{}, errors.New("bench: no clock for this store's commits")
}
