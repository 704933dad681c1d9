package daemon

import (
	"sync"
	"time"
)

// Settling: a commit may leave work to be done a moment later, beside the
// commits that follow (the file tree makes a burst's journal records
// durable with one flush of the filesystem and removes the markers it
// took). The daemon runs it DefaultSettle after the commit that left it,
// in one goroutine beside the loop (never two at once), and again after an
// error: the work can always be done again.

// settleJob is one task's settle work, handed out of its owner.
type settleJob struct {
	id   string
	work func() error
}

// settler schedules the settle work of every owner.
type settler struct {
	d       *Daemon
	atTime  time.Time // when to settle next; zero when nothing waits
	running bool      // a settle runs beside the loop
	back    chan []settleJob
	wg      sync.WaitGroup
}

func (s *settler) init(d *Daemon) {
	s.d = d
	s.back = make(chan []settleJob, 1)
}

// soon makes sure a settle is due.
func (s *settler) soon(*loop) {
	if s.atTime.IsZero() {
		s.atTime = s.d.now().Add(DefaultSettle)
	}
}

// at is when the loop's timer must fire for settling (zero: not for it).
func (s *settler) at(*loop) time.Time {
	if s.running {
		return time.Time{} // back answers first
	}
	return s.atTime
}

// due hands every owner's settle work to a goroutine when it is time.
func (s *settler) due(l *loop) {
	if s.running || s.atTime.IsZero() || s.atTime.After(s.d.now()) {
		return
	}
	work := s.take(l)
	if len(work) == 0 {
		return
	}
	s.running = true
	s.wg.Go(func() { s.back <- s.run(work) })
}

// run does the work and returns what failed.
func (s *settler) run(work []settleJob) []settleJob {
	var failed []settleJob
	for _, j := range work {
		if err := j.work(); err != nil {
			s.d.log.Warn("make the commit durable", "task", j.id, "err", err)
			failed = append(failed, j)
		}
	}
	return failed
}

// take hands every owner's settle work out of it.
func (s *settler) take(l *loop) []settleJob {
	var work []settleJob
	for id, o := range l.tasks {
		if o.settleWork != nil {
			work = append(work, settleJob{id: id, work: o.settleWork})
			o.settleWork = nil
		}
	}
	s.atTime = time.Time{}
	return work
}

// requeue hands settle work that failed back to its owners (unless they
// are gone), for the next settle.
func (s *settler) requeue(l *loop, failed []settleJob) {
	s.running = false
	for _, j := range failed {
		if o := l.tasks[j.id]; o != nil {
			if o.settleWork == nil {
				o.settleWork = j.work
			}
			s.soon(l)
		}
	}
}

// stop waits for a settle under way and settles what is left, in the
// loop's goroutine (the daemon is stopping).
func (s *settler) stop(l *loop) {
	s.wg.Wait()
	if s.running {
		s.requeue(l, <-s.back)
	}
	s.run(s.take(l))
}
