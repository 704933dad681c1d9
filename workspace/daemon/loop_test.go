package daemon

import (
	"sync/atomic"
	"testing"
	"time"
)

// The loop's committers run Parallel commits at once, and stopping them
// waits for the commits under way and the ones handed over before.
func TestCommittersRunParallelAndStopAfterTheirCommits(t *testing.T) {
	const parallel = 3
	l := &loop{d: &Daemon{cfg: Config{Parallel: parallel}}, jobs: make(chan func(), parallel)}
	stop := l.committers()
	started, release := make(chan struct{}, parallel), make(chan struct{})
	var finished atomic.Int32
	for range parallel {
		l.jobs <- func() {
			started <- struct{}{}
			<-release
			finished.Add(1)
		}
	}
	for i := range parallel {
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatalf("%d commits under way after a minute, want %d at once", i, parallel)
		}
	}
	close(release)
	l.jobs <- func() { finished.Add(1) }
	stop()
	if n := finished.Load(); n != parallel+1 {
		t.Fatalf("%d commits finished when the committers stopped, want %d", n, parallel+1)
	}
}
