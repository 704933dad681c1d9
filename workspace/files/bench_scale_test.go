package files

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkLoneClaim100 times one claim committed and settled, as the
// daemon does, in a task of 100 subtasks; BenchmarkLoneClaim10000 in one
// of 10,000. A marker's cost should not grow with its task: run both
// with -cpuprofile to see where a commit's time goes.
func BenchmarkLoneClaim100(b *testing.B) { benchLoneClaim(b, 100) }

// BenchmarkLoneClaim10000: see BenchmarkLoneClaim100.
func BenchmarkLoneClaim10000(b *testing.B) { benchLoneClaim(b, 10000) }

func benchLoneClaim(b *testing.B, size int) {
	ws, err := Init(b.TempDir(), workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	ws.SetServeOptions(ServeOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	d := &tester{s: ws, cs: map[string]*committer{}}
	ctx := context.Background()
	var (
		task string
		next int
	)
	newTask := func() {
		task, next = fmt.Sprintf("lone_%d", len(d.cs)), 1
		if err := fixture.PrepareTask(ctx, ws, task, size); err != nil {
			b.Fatal(err)
		}
		process(b, d, task)
		if err := fixture.ApprovePlan(ctx, ws, task); err != nil {
			b.Fatal(err)
		}
		process(b, d, task)
		settleAll(b, d)
	}
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if task == "" || next > size {
			newTask()
		}
		if _, err := ws.WriteClaim(ctx, task, fmt.Sprintf("agent_%d", next), fmt.Sprintf("st_%d", next)); err != nil {
			b.Fatal(err)
		}
		next++
		c0 := cpuUsed(b)
		b.StartTimer()
		if o := process(b, d, task); o.Taken != 1 {
			b.Fatalf("took %d markers, want 1", o.Taken)
		}
		settleAll(b, d)
		b.StopTimer()
		cpu += cpuUsed(b) - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu_ns/op")
}

// cpuUsed is the CPU time the process has used, user and system.
func cpuUsed(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
