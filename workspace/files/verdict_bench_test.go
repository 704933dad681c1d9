package files_test

import (
	"fmt"
	"os"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// BenchmarkClaimVerdict: one agent's claim served by the daemon, as the
// agent waits for it (workspace.Wait, as claim --wait and MCP do): the
// marker's rename → the daemon's commit → the verdict read, beside the
// floor (one durable 1 KiB replace) sampled before each claim. Each claim
// is on a subtask of its own, of tasks of 32 subtasks made executing off
// the clock.
func BenchmarkClaimVerdict(b *testing.B) {
	dir := b.TempDir()
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ws.Close()
	s := servetest.Tree(b, dir, 0)
	servetest.Start(b, s, daemon.Config{})
	floorDir, err := os.OpenRoot(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer floorDir.Close()
	data := make([]byte, 1024)
	const subs = 32
	ctx := b.Context()
	var lat, floors []time.Duration
	i := 0
	for b.Loop() {
		task := fmt.Sprintf("t%d", i/subs)
		if i%subs == 0 {
			b.StopTimer()
			executing(b, s, task, subs)
			b.StartTimer()
		}
		t := time.Now()
		if err := atomicfile.WriteFile(floorDir, "target.json", data, 0o644); err != nil {
			b.Fatal(err)
		}
		floors = append(floors, time.Since(t))
		t = time.Now()
		st, err := s.ReadState(ctx, task)
		if err != nil {
			b.Fatal(err)
		}
		name, err := s.WriteClaim(ctx, task, fmt.Sprintf("agent_%d", i), fmt.Sprintf("st_%d", i%subs+1))
		if err != nil {
			b.Fatal(err)
		}
		v, err := workspace.Wait(ctx, s, task, path.Base(name), st.JournalSeq)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		if v.Verdict != workspace.VerdictWon {
			b.Fatalf("claim %s: %+v, want it won", name, v)
		}
		i++
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[(len(d)-1)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(p50(lat), "p50-ms")
	b.ReportMetric(p50(floors), "floor-p50-ms")
	b.ReportMetric(p50(lat)/p50(floors), "x-floor")
}

// executing makes task with n subtasks executing and writes every
// subtask's output, waiting for the daemon's state at each step.
func executing(b *testing.B, s *files.Store, task string, n int) {
	b.Helper()
	ctx := b.Context()
	await := func(what string, ok func(workspace.State) bool) {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if st, err := s.ReadState(ctx, task); err == nil && ok(st) {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("task %s: not %s after a minute", task, what)
			}
		}
	}
	if err := fixture.PrepareTask(ctx, s, task, n); err != nil {
		b.Fatal(err)
	}
	await("plan proposed", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		b.Fatal(err)
	}
	await("executing", func(st workspace.State) bool { return st.Status == "executing" })
	for i := 1; i <= n; i++ {
		if _, err := s.WriteOutput(ctx, task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
			b.Fatal(err)
		}
	}
}
