package storetest

import (
	"context"
	"fmt"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
)

// BenchLoneClaim times one claim committed as the daemon commits it (a
// committer of the task's own, kept between markers) in a task whose
// approved plan has size independent subtasks, on the SQL stores. It
// reports cpu_ns/op, the process's CPU per claim, from getrusage. A
// marker's cost should not grow with its task: the stores run it at 100
// and 10,000 subtasks. With -cpuprofile the commits alone carry the label
// phase=commit: go tool pprof -tagfocus phase=commit.
func BenchLoneClaim(b *testing.B, s workspace.Store, size int, committer func(task string) workspace.Committer, req workspace.CommitRequest) {
	ctx := context.Background()
	var (
		task  string
		next  int
		c     workspace.Committer
		tasks int
	)
	commit := func(want int) {
		b.Helper()
		a, err := c.Commit(ctx, req)
		if err != nil || (want >= 0 && a.Taken != want) {
			b.Fatalf("commit: %+v, %v; want %d taken", a, err, want)
		}
	}
	newTask := func() {
		tasks++
		task, next = fmt.Sprintf("lone_%d", tasks), 1
		if err := fixture.PrepareTask(ctx, s, task, size); err != nil {
			b.Fatal(err)
		}
		c = committer(task)
		commit(-1)
		if err := fixture.ApprovePlan(ctx, s, task); err != nil {
			b.Fatal(err)
		}
		commit(1)
	}
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if task == "" || next > size {
			newTask()
		}
		if _, err := s.WriteClaim(ctx, task, fmt.Sprintf("agent_%d", next), fmt.Sprintf("st_%d", next)); err != nil {
			b.Fatal(err)
		}
		next++
		c0 := cpuUsed(b)
		b.StartTimer()
		pprof.Do(ctx, pprof.Labels("phase", "commit"), func(context.Context) { commit(1) })
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
