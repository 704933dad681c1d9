package daemon

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The loop: one goroutine owns it, and with it the owners of the tasks.
// It selects over the context, the leadership, the store's wake-ups, the
// commits coming back, the rescan and cleanup tickers, and one timer for
// the next deadline (a marker's wait, a stopped task's retry, settling).
// Wake-ups are coalesced into the owners they wake; woken owners are
// committed, up to Parallel at once, each by one goroutine at a time.

// done is what a commit sends back to the loop.
type done struct {
	o   *owner
	a   workspace.Applied
	err error
}

// loop is the state of the loop, touched only by the goroutine running
// it.
type loop struct {
	d     *Daemon
	lead  workspace.Leadership
	wk    workspace.Wakeups
	tasks map[string]*owner // every task the daemon serves: the one map keyed by task id

	queue    []*owner    // woken, to commit in this order
	busy     int         // commits under way
	jobs     chan func() // commits handed to the committers (committers)
	results  chan done   // commits coming back
	waitAt   time.Time   // when the first waiting owner is due (a marker's wait, a retry)
	scans    uint64      // full scans so far (owner.scan: the last that listed it)
	lastScan time.Time
	ready    bool

	settle settler

	unwatched int   // active tasks the source could not follow
	said      int   // the count last logged
	watchErr  error // why the last follow failed
	changed   bool  // something the live report holds changed
}

func newLoop(d *Daemon, lead workspace.Leadership, wk workspace.Wakeups) *loop {
	l := &loop{d: d, lead: lead, wk: wk, tasks: map[string]*owner{}, results: make(chan done, d.cfg.Parallel),
		jobs: make(chan func(), d.cfg.Parallel)}
	l.settle.init(d)
	return l
}

func (l *loop) run(ctx context.Context) error {
	d := l.d
	d.log.Info("serving", "wakeups", l.wk.Mode(), "rescan", d.cfg.Rescan, "cleanup_interval", d.cfg.CleanupInterval)
	stop := l.committers()
	defer stop()
	if err := l.scan(ctx, true); err != nil {
		return err
	}
	l.ready, l.changed = true, true
	l.publish()
	d.log.Info("ready", "tasks", len(l.tasks))
	if d.cfg.Ready != nil {
		d.cfg.Ready()
	}
	rescan := time.NewTicker(d.cfg.Rescan)
	defer rescan.Stop()
	var cleanupC <-chan time.Time
	if d.cfg.CleanupInterval > 0 {
		t := time.NewTicker(d.cfg.CleanupInterval)
		defer t.Stop()
		cleanupC = t.C
	}
	var chores chores
	defer chores.wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// A clean stop waits for the commits under way, then settles.
	defer func() {
		for l.busy > 0 {
			l.finish(ctx, <-l.results)
		}
		l.settle.stop(l)
	}()
	for {
		l.arm(timer)
		select {
		case <-ctx.Done():
			d.log.Info("stopping", "reason", context.Cause(ctx))
			return nil
		case <-l.lead.Done():
			return l.lead.Err()
		case w, ok := <-l.wk.C():
			if !ok {
				return errors.New("the wake-up source stopped")
			}
			l.note(ctx, w)
			// Coalesce: take whatever else is already queued.
		drain:
			for {
				select {
				case w, ok := <-l.wk.C():
					if !ok {
						break drain
					}
					l.note(ctx, w)
				default:
					break drain
				}
			}
		case r := <-l.results:
			l.finish(ctx, r)
		case <-rescan.C:
			if err := l.scan(ctx, false); err != nil {
				d.log.Error("rescan", "err", err)
			}
			chores.timeouts(ctx, d, l.progress())
		case <-timer.C:
			l.due()
			l.settle.due(l)
		case failed := <-l.settle.back:
			l.settle.requeue(l, failed)
		case <-cleanupC:
			chores.cleanup(ctx, d)
		case ack := <-d.pings:
			answer(ack)
		}
		l.dispatch(ctx)
		l.publish()
		d.cfg.Observer.Pending(len(l.queue), l.busy)
	}
}

// note records what a wake-up says: a task to look at, or everything.
func (l *loop) note(ctx context.Context, w workspace.Wake) {
	if w.Err != nil {
		l.d.log.Warn("wake-ups", "err", w.Err)
	}
	if w.Task == "" {
		if w.All {
			if err := l.scan(ctx, false); err != nil {
				l.d.log.Error("rescan", "err", err)
			}
		}
		return
	}
	o := l.owner(w.Task)
	if !o.followed && !o.finished && !o.refused {
		l.follow(o)
	}
	l.wake(o, w.Markers, w.All || len(w.Markers) == 0)
}

// owner returns the owner of task id, adding one when the daemon does not
// know the task.
func (l *loop) owner(id string) *owner {
	o := l.tasks[id]
	if o == nil {
		o = &owner{id: id, c: l.d.s.Committer(id)}
		l.tasks[id] = o
		l.changed = true
	}
	return o
}

// wake queues o for a commit, adding the markers that woke it.
func (l *loop) wake(o *owner, markers []string, all bool) {
	o.hint(markers, all)
	if !o.queued && !o.busy {
		o.queued = true
		l.queue = append(l.queue, o)
	}
}

// scan looks at every task the store lists: it adds the owners and
// follows missing, forgets the tasks no longer listed, and wakes each
// whole. start waits for every commit (the start-up scan, after which the
// daemon is ready).
func (l *loop) scan(ctx context.Context, start bool) error {
	ids, err := l.d.s.Tasks(ctx)
	if err != nil {
		return err
	}
	l.scans++
	if !start {
		l.d.cfg.Observer.Rescanned()
	}
	for _, id := range ids {
		o := l.owner(id)
		o.scan = l.scans
		if !o.finished && !o.refused {
			l.follow(o) // the watch first, then the look
		}
		l.wake(o, nil, true)
	}
	for id, o := range l.tasks {
		if o.scan != l.scans && !o.busy {
			l.drop(id)
		}
	}
	l.dispatch(ctx)
	for start && (l.busy > 0 || len(l.queue) > 0) && ctx.Err() == nil {
		select {
		case r := <-l.results:
			l.finish(ctx, r)
		case <-l.lead.Done():
			return l.lead.Err()
		case <-ctx.Done():
		case ack := <-l.d.pings:
			answer(ack)
		}
		l.dispatch(ctx)
	}
	l.sayUnwatched()
	l.lastScan = l.d.now()
	l.changed = true
	l.d.log.Debug("scanned", "tasks", len(ids))
	return nil
}

// dispatch starts commits of the queued owners, up to Parallel at once.
func (l *loop) dispatch(ctx context.Context) {
	for l.busy < l.d.cfg.Parallel && len(l.queue) > 0 && ctx.Err() == nil {
		o := l.queue[0]
		l.queue = l.queue[1:]
		o.queued, o.busy = false, true
		req := workspace.CommitRequest{Lead: l.lead, Max: l.d.cfg.Max}
		if !o.all {
			req.Markers = o.markers
		}
		o.markers, o.all = nil, false
		l.busy++
		// Never blocks: jobs holds Parallel, and at most Parallel are
		// under way.
		l.jobs <- func() {
			began := time.Now()
			a, err := o.c.Commit(ctx, req)
			l.d.cfg.Observer.Committed(time.Since(began), a, err)
			if len(a.Events) > 0 {
				observe(ctx, l.d, a.Events)
			}
			l.results <- done{o: o, a: a, err: err}
		}
	}
}

// committers starts the Parallel goroutines that run the commits
// dispatch hands them, and returns what stops them once the commits under
// way are back. They live as long as the loop, not one a commit: a
// commit's schema checks (santhosh-tekuri/jsonschema, recursive) need a
// stack of tens of KiB, which a new goroutine grows from its first few
// KiB by copying it at each doubling, a twentieth of a lone marker's CPU
// when each commit had a goroutine of its own.
func (l *loop) committers() (stop func()) {
	var wg sync.WaitGroup
	for range l.d.cfg.Parallel {
		wg.Go(func() {
			for job := range l.jobs {
				job()
			}
		})
	}
	return func() {
		close(l.jobs)
		wg.Wait()
	}
}

// due wakes the owners whose deadline has passed.
func (l *loop) due() {
	now := l.d.now()
	if l.waitAt.IsZero() || l.waitAt.After(now) {
		return
	}
	l.waitAt = time.Time{}
	for _, o := range l.tasks {
		switch {
		case o.waitTill.IsZero():
		case o.waitTill.After(now):
			l.waitFor(o.waitTill)
		default:
			o.waitTill = time.Time{}
			l.wake(o, nil, true)
		}
	}
}

// arm sets the timer to the next deadline.
func (l *loop) arm(timer *time.Timer) {
	next := l.settle.at(l)
	if !l.waitAt.IsZero() && (next.IsZero() || l.waitAt.Before(next)) {
		next = l.waitAt
	}
	timer.Stop()
	if !next.IsZero() {
		timer.Reset(max(next.Sub(l.d.now()), 0))
	}
}

// waitFor makes sure the timer fires by till (a little past it, so a
// marker is old enough by then).
func (l *loop) waitFor(till time.Time) {
	till = till.Add(10 * time.Millisecond)
	if l.waitAt.IsZero() || till.Before(l.waitAt) {
		l.waitAt = till
	}
}

// progress is the subtasks in progress of every task, for the timeout
// detector.
func (l *loop) progress() []workspace.InProgress {
	var items []workspace.InProgress
	for _, o := range l.tasks {
		items = append(items, o.progress...)
	}
	return items
}
