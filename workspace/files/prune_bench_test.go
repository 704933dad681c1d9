package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
)

// BenchmarkPrune10k prunes 10,000 finished tasks of five files each (a
// third kept, a third summarised, a third removed). Besides ns/op it
// reports the peak live heap during the run above the heap before it
// (peak-heap-B), and allocations per task. "stream" keeps only counts in
// the report (DiscardDecisions), "report" keeps every decision, "floor" is
// the filesystem's own cost of deleting the same files naively (benchFloor).
// Run with -benchtime=1x: one iteration writes 50,000 files.
func BenchmarkPrune10k(b *testing.B) { benchPrune(b, 10_000) }

// BenchmarkPrune1k is BenchmarkPrune10k with 1,000 tasks, to compare:
// with "stream" the peak heap stays the same while the tasks grow tenfold.
func BenchmarkPrune1k(b *testing.B) { benchPrune(b, 1_000) }

func benchPrune(b *testing.B, n int) {
	b.Run("floor", func(b *testing.B) { benchFloor(b, n) })
	for _, discard := range []bool{true, false} {
		name := "report"
		if discard {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				writeBenchTree(b, dir, n)
				root, err := os.OpenRoot(dir)
				if err != nil {
					b.Fatal(err)
				}
				p := newPruner(root, dir)
				p.DiscardDecisions = discard
				runtime.GC()
				stop := sampleHeap()
				b.StartTimer()

				rep, err := p.Run(context.Background())

				b.StopTimer()
				peak = max(peak, stop())
				if err != nil || len(rep.Errors) > 0 {
					b.Fatal(err, rep.Errors)
				}
				if got := rep.Counts.Kept + rep.Counts.Summarized + rep.Counts.Removed; got != n {
					b.Fatalf("handled %d tasks, want %d", got, n)
				}
				root.Close()
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(peak), "peak-heap-B")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
		})
	}
}

// benchAge is the age of the j-th benchmark task: a third each to keep,
// summarise and remove.
func benchAge(j int) time.Duration {
	return [...]time.Duration{2 * retention.Day, 10 * retention.Day, 50 * retention.Day}[j%3]
}

// writeBenchTree writes n finished tasks of five files each under dir and
// makes them durable, so a run is not charged for the setup's writeback.
func writeBenchTree(b *testing.B, dir string, n int) {
	b.Helper()
	for j := range n {
		writeTask(b, dir, taskSpec{id: fmt.Sprintf("task-%06d", j), status: vocab.StatusCompleted, completedAt: at(benchAge(j))})
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	// Where the kernel has no syncfs(2), a run starts from whatever it
	// has written.
	_ = syncFS(r)
}

// benchFloor is what the filesystem alone costs: the same tree cut down
// the naive way, deleting the same files in place with no state read, no
// lock, no crash safety and no sync. It is the floor the pruner is
// measured against.
func benchFloor(b *testing.B, n int) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		writeBenchTree(b, dir, n)
		b.StartTimer()
		for j := range n {
			td := filepath.Join(dir, "tasks", fmt.Sprintf("task-%06d", j))
			var err error
			switch benchAge(j) {
			case 10 * retention.Day:
				for _, name := range []string{"plan.json", ".done.worker_1", "outputs"} {
					if err = os.RemoveAll(filepath.Join(td, name)); err != nil {
						break
					}
				}
			case 50 * retention.Day:
				err = os.RemoveAll(td)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
}

// sampleHeap samples the live heap every 200µs until the returned function
// is called, which returns the peak above the heap at the start.
func sampleHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		peak = max(peak, read())
		if peak < base {
			return 0
		}
		return peak - base
	}
}
