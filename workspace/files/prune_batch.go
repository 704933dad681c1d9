package files

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
)

// deleters is how many goroutines delete old trees at once. Deleting is a
// chain of unlinks, each waiting on the disk (on a filesystem mounted with
// discard, every freed block is discarded before unlink returns) rather
// than on a CPU; many chains in flight keep the disk's queue full where one
// would leave it idle.
const deleters = 16

// deleteLater hands an old tree (tasks/.prune-<id> after a swap, or
// tasks/.trash-<id>) to the deleters, starting them on first use. The task
// is already summarised or gone; a tree left behind by a failure or a crash
// is deleted by the next run's recovery.
func (r *run) deleteLater(old string) {
	if r.del == nil {
		r.del = make(chan string, maxPending)
		for range deleters {
			r.delWG.Go(func() {
				for old := range r.del {
					if err := removeTree(r.p.Root, old); err != nil {
						r.addError(fmt.Sprintf("delete %s: %v", old, err))
					}
				}
			})
		}
	}
	r.del <- old
}

// addError records a failure that does not stop the run; safe for
// concurrent use.
func (r *run) addError(msg string) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	r.rep.Errors = append(r.rep.Errors, msg)
}

// pendingTask is a task locked and ready to be summarised or removed.
type pendingTask struct {
	d retention.Decision
	// locks are the task's lock, or every lock file of a directory
	// holding nothing but lock files.
	locks []*locking.Lock
	// old is what is deleted once the change is durable: the task's old
	// tree after a swap or a rename to trash; "" until then.
	old string
	err error
}

// task decides one task directory; a task to summarise or remove is locked,
// its summary built, and queued for flush.
func (r *run) task(id string) {
	info, err := ReadTaskInfo(r.p.Root, id)
	if err != nil {
		r.fail(retention.Decision{TaskID: id}, err)
		return
	}
	d := r.decide(info)
	if d.Action == retention.Keep || d.Action == retention.Skip {
		r.record(d)
		return
	}
	if info.LocksOnly {
		r.tidy(id, d)
		return
	}
	lockRel := path.Join("tasks", id, taskLockName)
	if r.p.DryRun {
		held, h, err := locking.Held(r.lockPath(lockRel))
		switch {
		case err != nil:
			r.fail(d, err)
		case held:
			r.record(retention.Busy(d, h))
		default:
			r.record(d)
		}
		return
	}
	// locking creates .locks/ through a path: refuse one that is not a
	// plain directory, so the lock file cannot land outside the tree.
	dirInfo, err := r.p.Root.Lstat(path.Join("tasks", id))
	if err != nil {
		r.fail(d, err)
		return
	}
	if fi, err := r.p.Root.Lstat(path.Join("tasks", id, ".locks")); err == nil && !fi.IsDir() {
		r.fail(d, errors.New(".locks is not a directory"))
		return
	}
	perm := dirInfo.Mode().Perm()
	lk, err := locking.TryAcquire(r.lockPath(lockRel), locking.Options{Agent: r.p.Agent, Perm: perm & 0o666})
	if err != nil {
		var te *locking.TimeoutError
		if errors.As(err, &te) {
			r.record(retention.Busy(d, te.Holder))
			return
		}
		r.fail(d, err)
		return
	}
	// Decide again from a fresh read: the task may have changed between
	// the first read and the lock.
	if info, err = ReadTaskInfo(r.p.Root, id); err != nil {
		lk.Release()
		r.fail(d, err)
		return
	}
	if d = r.decide(info); d.Action == retention.Keep || d.Action == retention.Skip {
		lk.Release()
		r.record(d)
		return
	}
	if d.Action == retention.Summarize {
		if err := r.buildSummary(id, perm); err != nil {
			_ = r.p.Root.RemoveAll(path.Join("tasks", prunePrefix+id))
			lk.Release()
			r.fail(d, err)
			return
		}
	}
	r.queue(&pendingTask{d: d, locks: []*locking.Lock{lk}})
}

// queue adds a locked task to the batch, flushing the batch once it holds
// a batch's worth of tasks or of locks.
func (r *run) queue(pt *pendingTask) {
	r.pending = append(r.pending, pt)
	r.held += len(pt.locks)
	if len(r.pending) >= r.batch() || r.held >= maxPending {
		r.flush()
	}
}

// tidy removes tasks/<id>, a directory holding nothing but lock files
// (decided d): every lock file is taken without waiting first — one held
// means a process still uses it, and the directory is skipped as busy —
// and the directory is judged again under them, from a fresh read.
func (r *run) tidy(id string, d retention.Decision) {
	root := r.p.Root
	locksRel := path.Join("tasks", id, ".locks")
	names, ok, err := lockFiles(root, locksRel)
	if err != nil || !ok || len(names) > maxLockFiles {
		r.again(id, nil, err)
		return
	}
	if r.p.DryRun {
		for _, n := range names {
			held, h, err := locking.Held(r.lockPath(path.Join(locksRel, n)))
			switch {
			case err != nil:
				r.fail(d, err)
				return
			case held:
				r.record(retention.Busy(d, h))
				return
			}
		}
		r.record(d)
		return
	}
	dirInfo, err := root.Lstat(path.Join("tasks", id))
	if err != nil || !dirInfo.IsDir() {
		r.again(id, nil, err)
		return
	}
	var locks []*locking.Lock
	for _, n := range names {
		lk, err := locking.TryAcquire(r.lockPath(path.Join(locksRel, n)), locking.Options{Agent: r.p.Agent, Perm: dirInfo.Mode().Perm() & 0o666})
		if err != nil {
			releaseAll(locks)
			var te *locking.TimeoutError
			if errors.As(err, &te) {
				r.record(retention.Busy(d, te.Holder))
				return
			}
			r.fail(d, err)
			return
		}
		locks = append(locks, lk)
	}
	// Under the locks: still nothing but these lock files? A lock file
	// made meanwhile is one this run does not hold.
	now, ok, err := lockFiles(root, locksRel)
	if err != nil || !ok || len(now) != len(names) {
		r.again(id, locks, err)
		return
	}
	info, err := ReadTaskInfo(root, id)
	if err != nil || !info.LocksOnly {
		r.again(id, locks, err)
		return
	}
	r.queue(&pendingTask{d: r.decide(info), locks: locks})
}

// again records the outcome of a directory that changed while it was
// being tidied, judged afresh, after releasing locks.
func (r *run) again(id string, locks []*locking.Lock, err error) {
	releaseAll(locks)
	if err != nil {
		r.fail(retention.Decision{TaskID: id}, err)
		return
	}
	info, err := ReadTaskInfo(r.p.Root, id)
	if err != nil {
		r.fail(retention.Decision{TaskID: id}, err)
		return
	}
	d := r.decide(info)
	if d.Action != retention.Keep && d.Action != retention.Skip {
		d.Action, d.Reason = retention.Skip, "changed while being judged; "+string(d.Action)+" at a later run: "+d.Reason
	}
	r.record(d)
}

func releaseAll(locks []*locking.Lock) {
	for _, l := range locks {
		l.Release()
	}
}

// maxPending bounds how many tasks are locked and queued at once: each
// holds a lock descriptor.
const maxPending = 128

// batch is how many locked tasks flush takes at once.
func (r *run) batch() int {
	if r.p.batch > 0 {
		return r.p.batch
	}
	return maxPending
}

// step marks the end of a step of summarising or removing a task.
func (r *run) step(step string) {
	if r.p.step != nil {
		r.p.step(step)
	}
}

// syncers is how many summaries flush makes durable at once. Each fsync
// waits on the disk; issued together, the kernel serves them in one pass
// and merges their cache flushes.
const syncers = 16

// flush carries out the queued summaries and removals in four steps, so a
// batch waits on the disk a few times rather than several times per task:
//
//  1. the built summaries are made durable: each summary directory and its
//     .locks/ fsynced, several at once (see syncers);
//  2. each summary is swapped with its task, each task to remove is
//     renamed to trash;
//  3. tasks/ is fsynced, making every swap and rename durable;
//  4. the outcomes are recorded, the locks released, and the old trees,
//     no longer under any task's name, handed to the deleters.
//
// Only the directories the batch changed are synced, never the whole
// filesystem: the cost of a batch does not depend on what other processes
// have written, and the holder records in the lock files of tasks about to
// be removed are never forced to disk only to be deleted.
//
// Each task passes through the same states as if handled alone, so the
// crash guarantees of Pruner hold task by task.
func (r *run) flush() {
	if len(r.pending) == 0 {
		return
	}
	if r.syncSummaries() > 0 {
		r.step("summarize: summary durable")
	}
	root := r.p.Root
	swapped := 0
	for _, pt := range r.pending {
		if pt.err != nil {
			continue
		}
		if pt.d.Action == retention.Summarize {
			pt.old, pt.err = r.swap(pt.d.TaskID)
		} else {
			pt.old, pt.err = r.trash(pt.d.TaskID)
		}
		if pt.err == nil {
			swapped++
		}
	}
	if swapped > 0 {
		var err error
		if err = r.tasksDir.Sync(); err != nil {
			err = fmt.Errorf("sync tasks directory: %w", err)
		}
		for _, pt := range r.pending {
			if pt.err == nil && pt.old != "" {
				if err != nil {
					pt.err = err
					pt.old = "" // not known durable: leave it to recovery
				}
				if pt.d.Action == retention.Summarize {
					r.step("summarize: change durable")
				} else {
					r.step("remove: change durable")
				}
			}
		}
	}
	for _, pt := range r.pending {
		if pt.err == nil && pt.old != "" {
			r.deleteLater(pt.old)
		}
		if pt.err != nil {
			// Drop the summary unless it is all that stands for the
			// task (a fallback swap stuck between its renames): then
			// recovery moves it into place.
			if _, err := root.Lstat(path.Join("tasks", pt.d.TaskID)); pt.d.Action == retention.Summarize && err == nil {
				_ = root.RemoveAll(path.Join("tasks", prunePrefix+pt.d.TaskID))
			}
			r.fail(pt.d, pt.err)
		} else {
			r.record(pt.d)
		}
		releaseAll(pt.locks)
	}
	clear(r.pending)
	r.pending = r.pending[:0]
	r.held = 0
}

// syncSummaries makes the summaries of the pending batch durable, at most
// syncers at a time, setting the error of each that fails, and returns how
// many summaries it synced.
func (r *run) syncSummaries() int {
	var todo []*pendingTask
	for _, pt := range r.pending {
		if pt.d.Action == retention.Summarize {
			todo = append(todo, pt)
		}
	}
	if len(todo) == 0 {
		return 0
	}
	next := make(chan *pendingTask)
	var wg sync.WaitGroup
	for range min(syncers, len(todo)) {
		wg.Go(func() {
			for pt := range next {
				pt.err = syncSummary(r.p.Root, path.Join("tasks", prunePrefix+pt.d.TaskID))
			}
		})
	}
	for _, pt := range todo {
		next <- pt
	}
	close(next)
	wg.Wait()
	return len(todo)
}

// decide applies the policy, turning an unreadable state into a skip.
func (r *run) decide(info retention.TaskInfo) retention.Decision {
	d := retention.Decide(info, r.p.Policy, r.now)
	if info.StateErr != "" {
		d.Action = retention.Skip
	}
	return d
}

// fail records a task that could not be handled as skipped, and the error.
func (r *run) fail(d retention.Decision, err error) {
	d, msg := retention.Failed(d, err)
	r.addError(msg)
	r.record(d)
}

// record files d under its outcome and reports progress.
func (r *run) record(d retention.Decision) { r.rep.Record(d, r.p.DiscardDecisions, r.p.OnProgress) }

// finish sorts the report's lists by task id.
func finish(rep *retention.Report) {
	for _, l := range []*[]retention.Decision{&rep.Kept, &rep.Summarized, &rep.Removed, &rep.Skipped} {
		slices.SortFunc(*l, func(a, b retention.Decision) int { return strings.Compare(a.TaskID, b.TaskID) })
	}
}
