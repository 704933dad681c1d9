package files

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkBurst32 times the daemon taking a burst of 32 done markers of
// one task (examine, journal, apply, back up, write state.json), with the
// disk's floor measured alternately in the same run. x_floor_rate is the
// burst's markers per second over what one durable write per marker
// allows.
func BenchmarkBurst32(b *testing.B) { benchBurst(b, 32) }

// BenchmarkBurst1 is one marker at a time: x_floor is its latency over
// the floor's.
func BenchmarkBurst1(b *testing.B) { benchBurst(b, 1) }

func benchBurst(b *testing.B, n int) {
	dir := b.TempDir()
	ws, err := Init(dir, workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	s := ws
	s.SetServeOptions(ServeOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	d := &tester{s: s, cs: map[string]*committer{}}
	ctx := context.Background()
	// Tasks of 256 subtasks, as `workspaced bench` uses: a new one, made
	// outside the timer, when the current one has none left.
	const perTask = 256
	var (
		task string
		next int
	)
	take := func() workspace.Applied { return process(b, d, task) }
	newTask := func() {
		task, next = fmt.Sprintf("burst_%d", time.Now().UnixNano()), 1
		if err := fixture.PrepareTask(ctx, ws, task, perTask); err != nil {
			b.Fatal(err)
		}
		take()
		if err := fixture.ApprovePlan(ctx, ws, task); err != nil {
			b.Fatal(err)
		}
		take()
	}
	drop := func() {
		if task == "" || next+n-1 > perTask {
			newTask()
		}
		for range n {
			sub := fmt.Sprintf("st_%d", next)
			next++
			if _, err := ws.WriteOutput(ctx, task, sub, "agent", []byte(`{"summary":"ok"}`)); err != nil {
				b.Fatal(err)
			}
			if _, err := ws.WriteDone(ctx, workspace.DoneRequest{TaskID: task, Agent: "agent", OutputFile: "outputs/" + sub + ".json"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The floor is what `workspaced bench` calls it: one durable 1 KiB
	// replace (temporary file, fsync, rename, directory fsync).
	floorDir, err := os.OpenRoot(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer floorDir.Close()
	data := make([]byte, 1024)
	var opTime, floorTime time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		drop()
		b.StartTimer()
		t := time.Now()
		if o := take(); o.Taken != n {
			b.Fatalf("took %d markers, want %d", o.Taken, n)
		}
		opTime += time.Since(t)
		t = time.Now()
		if err := atomicfile.WriteFile(floorDir, "target.json", data, 0o644); err != nil {
			b.Fatal(err)
		}
		floorTime += time.Since(t)
	}
	b.StopTimer()
	settleAll(b, d)
	b.ReportMetric(float64(opTime.Nanoseconds())/float64(b.N), "burst_ns")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(b.N), "floor_ns")
	if n == 1 {
		b.ReportMetric(float64(opTime)/float64(floorTime), "x_floor")
	} else {
		b.ReportMetric(float64(n)*float64(floorTime)/float64(opTime), "x_floor_rate")
	}
}
