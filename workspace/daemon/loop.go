package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

// The watch loop: one goroutine owns it, and with it the daemon's map of
// tasks. It selects over the context, the watcher's events and errors, the
// rescan and cleanup tickers, and one timer for the next deadline (a
// marker's grace period, a stopped task's retry, or settling). Events are coalesced into the tasks
// they wake; the woken tasks are processed, up to Parallel at once, and
// the loop waits for them before it looks at anything else.

// wake is why a task is to be looked at: the names of the markers its
// events named, or all (anything may have changed: look at the whole
// directory).
type wake struct {
	names []string
	all   bool
}

// maxHints bounds the marker names a wake remembers; past it the task is
// looked at whole.
const maxHints = 64

// unsettled is one task's settle work, handed out of the task.
type unsettled struct {
	id string
	s  settlement
}

// loop is the state of the watch loop, touched only by the goroutine
// running it.
type loop struct {
	d *Daemon
	w *fsnotify.Watcher

	graceAt  time.Time // when the first waiting task is due (a grace period, a retry)
	settleAt time.Time // when to settle next; zero when nothing waits
	settling bool      // a settle runs beside the loop
	settled  chan []unsettled
	settleWG sync.WaitGroup

	cleaning bool
	cleanWG  sync.WaitGroup

	live    atomic.Pointer[Live] // the report the daemon's socket gives
	changed bool                 // something the report holds changed

	unwatched int   // active tasks whose watch failed
	said      int   // the count last logged
	watchErr  error // why the last watch failed

	woken    []*task   // tasks to process, each once (task.woken says why)
	scans    uint64    // full scans so far (task.scan: the last that saw it)
	lastScan time.Time // when the last full scan ended
}

func (l *loop) run(ctx context.Context) error {
	d := l.d
	tasksDir := filepath.Join(d.ws.Dir(), "tasks")
	if err := l.w.Add(tasksDir); err != nil {
		return err
	}
	d.log.Info("serving", "root", d.ws.Dir(), "rescan", d.cfg.Rescan, "grace", d.cfg.Grace, "cleanup_interval", d.cfg.CleanupInterval)
	l.fullScan(ctx, true)
	d.log.Info("ready", "tasks", len(d.tasks))
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
	cleanDone := make(chan struct{}, 1)
	defer l.cleanWG.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// A clean stop waits for a settle under way and settles what is left.
	defer func() {
		l.settleWG.Wait()
		if l.settling {
			l.requeue(<-l.settled)
		}
		l.settleNow()
	}()
	for {
		l.arm(timer)
		select {
		case <-ctx.Done():
			d.log.Info("stopping", "reason", context.Cause(ctx))
			return nil
		case ev, ok := <-l.w.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			l.note(ev)
			// Coalesce: take whatever else is already queued.
		drain:
			for {
				select {
				case ev, ok := <-l.w.Events:
					if !ok {
						break drain
					}
					l.note(ev)
				default:
					break drain
				}
			}
			l.processAll(ctx, false)
		case err, ok := <-l.w.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				d.log.Warn("watch queue overflowed, rescanning")
			} else {
				d.log.Warn("watcher error, rescanning", "err", err)
			}
			l.fullScan(ctx, false)
		case <-rescan.C:
			l.fullScan(ctx, false)
			d.checkTimeouts(ctx)
		case <-timer.C:
			now := d.now()
			if !l.graceAt.IsZero() && !l.graceAt.After(now) {
				l.graceAt = time.Time{}
				for _, t := range d.tasks {
					if t.waitTill.IsZero() {
						continue
					}
					if t.waitTill.After(now) {
						l.waitFor(t.waitTill)
						continue
					}
					t.waitTill = time.Time{}
					l.wake(t, wake{all: true})
				}
				l.processAll(ctx, false)
			}
			if !l.settleAt.IsZero() && !l.settleAt.After(now) {
				l.settle(ctx)
			}
		case done := <-l.settled:
			l.settling = false
			l.requeue(done)
		case <-cleanupC:
			if !l.cleaning {
				l.cleaning = true
				l.cleanWG.Go(func() {
					d.cleanup(ctx)
					cleanDone <- struct{}{}
				})
			}
		case <-cleanDone:
			l.cleaning = false
		}
	}
}

// How soon a task stopped by an error is tried again: retryFirst after
// the first failure, twice as long after each next one, at most retryMax,
// so that once a full disk or a read-only filesystem is mended the task
// goes on within a second or two.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// stop notes that processing t failed with err: it is retried with
// backoff (see processAll) and status names it. The error is logged when
// it is new, not at every retry.
func (l *loop) stop(t *task, err error) {
	if t.stopped == nil || t.stopped.Error() != err.Error() {
		args := []any{"task", t.id, "err", err}
		if h := workspace.FaultHint(err); h != "" {
			args = append(args, "hint", h)
		}
		l.d.log.Error("task stopped, retrying", args...)
	}
	if t.stopped == nil {
		t.since = l.d.now()
	}
	t.stopped = err
	t.failures++
	l.changed = true
}

// arm sets the timer to the next deadline: the earliest grace period of
// a waiting marker, or settling.
func (l *loop) arm(timer *time.Timer) {
	next := l.settleAt
	if l.settling {
		next = time.Time{} // settled answers first
	}
	if !l.graceAt.IsZero() && (next.IsZero() || l.graceAt.Before(next)) {
		next = l.graceAt
	}
	timer.Stop()
	if !next.IsZero() {
		timer.Reset(max(next.Sub(l.d.now()), 0))
	}
}

// waitFor makes sure the timer fires by a marker's grace period (a little
// past it, so the marker is old enough by then).
func (l *loop) waitFor(till time.Time) {
	till = till.Add(10 * time.Millisecond)
	if l.graceAt.IsZero() || till.Before(l.graceAt) {
		l.graceAt = till
	}
}

// note records what an event means: a task to look at, or (for a new
// task directory) a watch to add and a scan.
func (l *loop) note(ev fsnotify.Event) {
	d := l.d
	rel, err := filepath.Rel(filepath.Join(d.ws.Dir(), "tasks"), ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	id := parts[0]
	if workspace.ValidateID("task id", id) != nil {
		return
	}
	if len(parts) == 1 {
		// tasks/<id> itself: a new task directory (watch, then scan), or
		// one removed.
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			l.drop(id)
			return
		}
		if ev.Has(fsnotify.Create) {
			t := l.task(id)
			t.finished = false
			if d.ws.IsTaskDir(id) {
				l.watch(t) // never through a symlink: process refuses that
			}
			l.wake(t, wake{all: true})
		}
		return
	}
	if len(parts) != 2 {
		return
	}
	name := parts[1]
	if _, ok := workspace.IsMarkerName(name); ok && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write)) {
		l.wake(l.task(id), wake{names: []string{name}})
	} else if name == "task.json" && ev.Has(fsnotify.Create) {
		l.wake(l.task(id), wake{all: true})
	}
}

// wake queues t to be processed, adding w to why.
func (l *loop) wake(t *task, w wake) {
	if !t.queued {
		t.queued = true
		l.woken = append(l.woken, t)
	}
	switch {
	case t.woken.all:
	case w.all || len(t.woken.names)+len(w.names) > maxHints:
		t.woken = wake{all: true}
	default:
		t.woken.names = append(t.woken.names, w.names...)
	}
}

// task returns the task of id, adding it if the daemon does not know it.
func (l *loop) task(id string) *task {
	t := l.d.tasks[id]
	if t == nil {
		t = &task{id: id, d: l.d}
		l.d.tasks[id] = t
	}
	return t
}

func (l *loop) watch(t *task) {
	if t.watched {
		return
	}
	if err := l.w.Add(filepath.Join(l.d.ws.Dir(), "tasks", t.id)); err != nil {
		// Without a watch the task is still served by the rescans; the
		// tasks left so are counted and said once (see sayUnwatched).
		if !t.unwatchable {
			t.unwatchable = true
			l.unwatched++
			l.changed = true
		}
		l.watchErr = err
		return
	}
	l.watchable(t)
	t.watched = true
}

func (l *loop) unwatch(t *task) {
	l.watchable(t)
	if !t.watched {
		return
	}
	_ = l.w.Remove(filepath.Join(l.d.ws.Dir(), "tasks", t.id))
	t.watched = false
}

// watchable takes t out of the count of tasks whose watch failed.
func (l *loop) watchable(t *task) {
	if t.unwatchable {
		t.unwatchable = false
		l.unwatched--
		l.changed = true
	}
}

// sayUnwatched logs, when it changed, how many active tasks have no
// watch: once with a count, not once per task per rescan.
func (l *loop) sayUnwatched() {
	if l.unwatched == l.said {
		return
	}
	l.said = l.unwatched
	if l.unwatched == 0 {
		l.d.log.Info("every active task directory is watched again")
		return
	}
	l.d.log.Warn("task directories not watched; markers in them are taken by the rescans",
		"count", l.unwatched, "err", l.watchErr, "hint", "raise the inotify watch limit (sysctl fs.inotify.max_user_watches)")
}

// drop forgets a task whose directory is gone.
func (l *loop) drop(id string) {
	if t := l.d.tasks[id]; t != nil {
		l.unwatch(t)
		delete(l.d.tasks, id)
	}
}

// fullScan looks at every task: it adds the watches missing, forgets the
// tasks whose directory is gone, then processes each task (recover: a
// full load of state and journal, as on start). Tasks known to be
// finished are only checked for markers.
func (l *loop) fullScan(ctx context.Context, recover bool) {
	d := l.d
	ids, err := d.ws.TaskIDs()
	if err != nil {
		d.log.Error("list tasks", "err", err)
		return
	}
	l.scans++
	for _, id := range ids {
		t := l.task(id)
		t.scan = l.scans
		if !t.finished && !t.refused {
			l.watch(t) // the watch first, then the scan
		}
		if !recover && !t.queued {
			// A task known quiet, its directory unchanged, is passed
			// over here: an Lstat, not a goroutine of processAll.
			if fi, err := d.ws.Root().Lstat(workspace.TaskDir(id)); err == nil && t.quietAt(fi) {
				continue
			}
		}
		l.wake(t, wake{all: true})
	}
	for id, t := range d.tasks {
		if t.scan != l.scans {
			l.drop(id)
		}
	}
	l.processAll(ctx, recover)
	l.sayUnwatched()
	l.lastScan = d.now()
	l.changed = true
	l.publish()
	d.log.Debug("scanned", "tasks", len(ids))
}

// processAll processes the tasks woken, up to Parallel at once, waits for
// them, and applies the outcomes to their watch state.
func (l *loop) processAll(ctx context.Context, recover bool) {
	woken := l.woken
	l.woken = nil
	if len(woken) == 0 {
		return
	}
	d := l.d
	type result struct {
		t   *task
		out outcome
	}
	results := make([]result, 0, len(woken))
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, d.cfg.Parallel)
	)
	for _, t := range woken {
		w := t.woken
		t.queued, t.woken = false, wake{}
		if ctx.Err() != nil || l.d.tasks[t.id] != t {
			continue // stopping, or dropped since it was woken
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out := t.process(ctx, w, recover)
			mu.Lock()
			results = append(results, result{t, out})
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, r := range results {
		t, o := r.t, r.out
		if o.gone {
			if o.err == nil {
				l.drop(t.id)
				continue
			}
			// Not a directory: kept, unwatched and refused, and said once.
			if !t.refused {
				d.log.Warn("task entry refused", "task", t.id, "err", o.err)
				t.refused, l.changed = true, true
			}
			l.unwatch(t)
			continue
		}
		if t.refused {
			t.refused, l.changed = false, true
		}
		if o.err != nil && ctx.Err() == nil {
			l.stop(t, o.err)
		} else if o.err == nil && t.stopped != nil {
			d.log.Info("task resumed", "task", t.id, "after", d.now().Sub(t.since).Round(time.Millisecond), "retries", t.failures)
			t.stopped, t.failures, t.since = nil, 0, time.Time{}
			l.changed = true
		}
		if o.taken > 0 {
			d.log.Info("markers taken", "task", t.id, "count", o.taken)
		}
		wait := o.waitTill
		if o.partial {
			wait = t.waitTill // the markers waiting wait as they did
		}
		t.waitTill = wait
		if t.stopped != nil {
			retry := d.now().Add(min(retryFirst<<min(t.failures-1, 16), retryMax))
			if t.waitTill.IsZero() || retry.Before(t.waitTill) {
				t.waitTill = retry
			}
		}
		if !t.waitTill.IsZero() {
			l.waitFor(t.waitTill)
		}
		t.finished = o.finished && wait.IsZero()
		if t.finished {
			l.unwatch(t)
		} else {
			l.watch(t)
		}
		if !t.unsettled.empty() {
			l.settleSoon()
		}
	}
	l.publish()
}

// publish makes a new report for the daemon's socket when something in it
// changed.
func (l *loop) publish() {
	if !l.changed {
		return
	}
	l.changed = false
	r := l.report()
	l.live.Store(&r)
}
