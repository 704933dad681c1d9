package daemon

import (
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/workspaced/workspaced/workspace"
)

// liveReport is the daemon's latest report of itself, made by the loop
// and read by anyone.
type liveReport struct {
	p atomic.Pointer[workspace.Live]
}

func (r *liveReport) store(l workspace.Live) { r.p.Store(&l) }
func (r *liveReport) load() workspace.Live   { return *r.p.Load() }

// publish makes a new report when something in it changed.
func (l *loop) publish() {
	if !l.changed {
		return
	}
	l.changed = false
	l.d.live.store(l.report())
}

// report walks the owners, so the loop makes it only when something in it
// changed.
func (l *loop) report() workspace.Live {
	r := workspace.Live{PID: os.Getpid(), Epoch: l.lead.Epoch(), Ready: l.ready, LastRescan: l.lastScan,
		Tasks: len(l.tasks), Unwatched: l.unwatched, Wakeups: l.wk.Mode(), Watches: l.wk.Held(),
		Stopped: []workspace.StoppedTask{}}
	r.Descriptors, r.DescriptorLimit = descriptors()
	if l.unwatched > 0 && l.watchErr != nil {
		r.UnwatchedReason = l.watchErr.Error()
	}
	for id, o := range l.tasks {
		if o.stopped != nil {
			r.Stopped = append(r.Stopped, workspace.StoppedTask{Task: id, Error: o.stopped.Error(), Since: o.since,
				Retries: o.failures, Hint: hintOf(o.stopped), Fault: workspace.FaultKind(o.stopped)})
		}
		if o.refused {
			r.Refused = append(r.Refused, id)
		}
	}
	slices.SortFunc(r.Stopped, func(a, b workspace.StoppedTask) int { return strings.Compare(a.Task, b.Task) })
	slices.Sort(r.Refused)
	return r
}

// descriptors is how many file descriptors the process holds open (0
// when it cannot tell) and its soft limit.
func descriptors() (open int, limit uint64) {
	if fds, err := os.ReadDir("/dev/fd"); err == nil {
		open = len(fds) - 1 // the directory read itself
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		limit = uint64(rl.Cur)
	}
	return open, limit
}
