package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/vocab"
)

// Names the pruner uses inside tasks/. Task ids never start with a dot, so
// these never collide with a task, and every reader ignores them.
const (
	// prunePrefix names the summary being built for a task
	// (tasks/.prune-<id>), or, after the swap, the task's old full tree
	// on its way out.
	prunePrefix = ".prune-"
	// trashPrefix names a task directory on its way out
	// (tasks/.trash-<id>).
	trashPrefix = ".trash-"
	// cleanupLock serialises pruners over one tree, relative to the
	// workspace root.
	cleanupLock = "tasks/.locks/cleanup.lock"
	// taskLockName is a task's own lock, relative to its directory.
	taskLockName = ".locks/task.lock"
)

// errUnsupported reports a system call the kernel, the filesystem or the
// platform does not offer (renameat2 RENAME_EXCHANGE).
var errUnsupported = errors.New("not supported")

// Pruner carries out the retention policy on a workspace tree. Fill its
// fields and call Run; a Pruner holds no state between runs.
//
// Guarantees:
//
//   - Active tasks (not completed, failed or cancelled) and tasks whose
//     state.json cannot be read are never touched.
//   - A task is summarised or removed only under its lock
//     tasks/<id>/.locks/task.lock, taken without waiting: a busy task is
//     skipped and reported, never waited on and never raced. The policy is
//     decided again under the lock, from a fresh read.
//   - Only one Pruner acts on a tree at a time: Run holds
//     tasks/.locks/cleanup.lock and fails with ErrCleanupRunning if another
//     run holds it.
//   - Crash safety: a crash at any instant leaves tasks/<id> whole,
//     summarised, or gone, never half. Summarising builds the summary in
//     tasks/.prune-<id> from hard links (task.json, state.json, events.log
//     and every lock file in .locks/, so a lock held or awaited on the
//     task stays the same inode), makes it durable, then swaps it with the
//     task in one renameat2(RENAME_EXCHANGE) and deletes the old tree.
//     Removing renames tasks/<id> to tasks/.trash-<id> and deletes that.
//     Whatever a crash leaves in .prune-* and .trash-* is finished by the
//     next Run before it prunes anything.
//   - Where the kernel or filesystem cannot swap atomically (not Linux,
//     or a filesystem that refuses RENAME_EXCHANGE), summarising renames
//     the task to .trash-<id> and the summary into place. A crash between
//     the two renames leaves the task briefly absent; the next Run's
//     recovery moves the complete summary into place, so after recovery
//     the task is again whole, summarised or gone.
//   - A summarised or removed task is reported only after the rename is
//     durable (tasks/ fsynced).
//   - Files written into a task by someone not holding its lock while it
//     is being summarised (an env entry under its own lock) are lost with
//     the old tree; such writes to a task finished FullDays ago are not
//     expected.
//   - A task directory holding nothing but lock files (.locks/ and regular
//     files in it: what a process leaves by taking the lock of a task
//     already removed) is removed and reported as removed, whatever the
//     policy — once every one of its lock files is taken without waiting.
//     One held means a process still uses it: it is skipped as busy. A
//     directory holding anything else is never taken for one.
//   - Memory stays flat in the number of tasks, apart from the Report's
//     lists (see DiscardDecisions): tasks/ is read in batches and each
//     state.json as a bounded token stream.
//
// Callers that wait on a task lock (the daemon) must check, once they hold
// it, that tasks/<id> still exists: a pruner may have removed it.
type Pruner struct {
	// Root is the workspace root; everything is read and written through
	// it.
	Root *os.Root
	// RootDir is the same root as a path, for lock files (flock works on
	// paths). Empty means the absolute form of Root.Name().
	RootDir string
	// Policy is checked with Validate before anything is read.
	Policy Policy
	// Now gives the instant ages are measured at, once per Run (nil:
	// time.Now).
	Now func() time.Time
	// DryRun decides and reports without changing anything: no lock is
	// taken and no lock file is created. A busy task is still reported
	// (the lock is probed with locking.Held, which creates nothing), the
	// leftovers of a crashed run are listed in Recovered but not touched,
	// and Summarized and Removed list what a real run would do.
	DryRun bool
	// Agent names this pruner in the lock holder records it leaves.
	Agent string
	// OnProgress, if set, is called once per task as soon as its outcome
	// is known, from the goroutine running Run: Action is keep, summarize,
	// remove (done, or would be done in a dry run) or skip.
	OnProgress func(Decision)
	// DiscardDecisions leaves the Report's decision lists empty (Counts
	// still counts them), so memory stays flat however many tasks there
	// are; outcomes then reach the caller only through OnProgress.
	DiscardDecisions bool

	// Only this package's tests set the fields below.

	// exchange swaps two entries of a directory atomically (nil:
	// renameExchange); the tests give one that refuses, to exercise the
	// fallback.
	exchange func(dir *os.File, a, b string) error
	// step, if set, is called between the steps of summarising and
	// removing a task; the crash tests kill the process from it at each
	// step in turn.
	step func(step string)
	// batch bounds a batch of locked tasks (0: maxPending); the crash
	// tests make it small to crash inside small batches.
	batch int
}

// Run applies the policy to every task directory under tasks/ and returns
// what it did. It first recovers whatever a crashed run left behind. It
// returns an error only when it cannot run at all (invalid policy, tasks/
// unreadable, another cleanup running, ctx done); failures on single tasks
// are collected in Report.Errors and the run goes on. A missing tasks/
// directory is an empty workspace: an empty report and no error.
func (p *Pruner) Run(ctx context.Context) (Report, error) {
	rep := Report{DryRun: p.DryRun}
	if err := Validate(p.Policy); err != nil {
		return rep, err
	}
	if p.Root == nil {
		return rep, errors.New("pruner has no root")
	}
	rootDir := p.RootDir
	if rootDir == "" {
		abs, err := filepath.Abs(p.Root.Name())
		if err != nil {
			return rep, fmt.Errorf("resolve workspace root: %w", err)
		}
		rootDir = abs
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	r := &run{p: p, rootDir: rootDir, now: now(), rep: &rep}

	if fi, err := p.Root.Stat("tasks"); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	} else if err != nil {
		return rep, fmt.Errorf("stat tasks directory: %w", err)
	} else if !fi.IsDir() {
		return rep, errors.New("tasks is not a directory")
	}
	if !p.DryRun {
		lk, err := locking.TryAcquire(r.lockPath(cleanupLock), locking.Options{Agent: p.Agent, Perm: 0o644})
		if err != nil {
			if errors.Is(err, locking.ErrLocked) {
				return rep, fmt.Errorf("%w: %w", ErrCleanupRunning, err)
			}
			return rep, fmt.Errorf("take cleanup lock: %w", err)
		}
		defer lk.Release()
	}
	if err := r.recover(ctx); err != nil {
		return rep, err
	}
	err := r.prune(ctx)
	finish(&rep)
	return rep, err
}

// run is the state of one Run.
type run struct {
	p       *Pruner
	rootDir string
	now     time.Time
	rep     *Report
	// moved holds the ids summarised by the two-rename fallback during
	// this run: their entry left and re-entered tasks/, so the listing
	// may show them again. It stays empty where RENAME_EXCHANGE works.
	moved map[string]bool
	// noExchange is set once the atomic exchange proved unsupported.
	noExchange bool
	// tasksDir is tasks/, open for the swaps and syncs of prune.
	tasksDir *os.File
	// pending is the batch of locked tasks waiting for flush; held counts
	// the locks they hold.
	pending []*pendingTask
	held    int
	// del feeds old trees to the deleter goroutines (see deleteLater).
	del   chan string
	delWG sync.WaitGroup
	// errMu guards rep.Errors, which the deleters also append to.
	errMu sync.Mutex
}

func (r *run) lockPath(rel string) string {
	return filepath.Join(r.rootDir, filepath.FromSlash(rel))
}

// eachEntry calls fn for every entry of tasks/, reading the listing in
// batches of dirBatch so memory stays flat in the number of tasks.
func (r *run) eachEntry(ctx context.Context, fn func(fs.DirEntry)) error {
	dir, err := r.p.Root.Open("tasks")
	if err != nil {
		return fmt.Errorf("open tasks directory: %w", err)
	}
	defer dir.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := dir.ReadDir(dirBatch)
		for _, e := range batch {
			fn(e)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list tasks directory: %w", err)
		}
	}
}

// recover finishes or rolls back what a crashed run left in tasks/:
//
//   - .trash-<id> is a task on its way out: removed;
//   - .prune-<id> while tasks/<id> exists is an unfinished summary, or the
//     old full tree after the swap: removed either way;
//   - .prune-<id> while tasks/<id> is missing and .trash-<id> exists is a
//     complete summary whose task the two-rename fallback had just moved
//     to trash (the trash is deleted only after the summary is in place):
//     renamed into place, before any trash is deleted;
//   - .prune-<id> with neither tasks/<id> nor .trash-<id> is an old tree
//     whose task went away since: removed.
//
// The cleanup lock makes this run the only one creating such entries. In a
// dry run the leftovers are only listed.
func (r *run) recover(ctx context.Context) error {
	root := r.p.Root
	var pending []string
	if err := r.eachEntry(ctx, func(e fs.DirEntry) {
		n := e.Name()
		if strings.HasPrefix(n, prunePrefix) || strings.HasPrefix(n, trashPrefix) {
			pending = append(pending, n) // only a crash leaves these: few
		}
	}); err != nil {
		return err
	}
	// A .prune-<id> may move into place: finish it before any trash is
	// deleted, so the order of the listing does not matter.
	slices.SortStableFunc(pending, func(a, b string) int {
		return boolCmp(!strings.HasPrefix(a, prunePrefix), !strings.HasPrefix(b, prunePrefix))
	})
	for _, n := range pending {
		rel := path.Join("tasks", n)
		if id, ok := strings.CutPrefix(n, prunePrefix); ok {
			_, err := root.Lstat(path.Join("tasks", id))
			limbo := false
			if errors.Is(err, fs.ErrNotExist) && vocab.ValidID(id) {
				_, terr := root.Lstat(path.Join("tasks", trashPrefix+id))
				limbo = terr == nil
			}
			switch {
			case limbo:
				if r.p.DryRun {
					r.rep.Recovered = append(r.rep.Recovered, "would move summary "+rel+" into place")
					continue
				}
				if err := root.Rename(rel, path.Join("tasks", id)); err != nil {
					r.addError(fmt.Sprintf("recover summary %s: %v", rel, err))
					continue
				}
				if err := atomicfile.SyncDir(root, "tasks"); err != nil {
					r.addError(fmt.Sprintf("recover summary %s: %v", rel, err))
					continue
				}
				r.rep.Recovered = append(r.rep.Recovered, "moved summary "+rel+" into place")
				continue
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				r.addError(fmt.Sprintf("recover %s: %v", rel, err))
				continue
			}
		}
		if r.p.DryRun {
			r.rep.Recovered = append(r.rep.Recovered, "would delete leftover "+rel)
			continue
		}
		if err := removeTree(root, rel); err != nil {
			r.addError(fmt.Sprintf("delete leftover %s: %v", rel, err))
			continue
		}
		r.rep.Recovered = append(r.rep.Recovered, "deleted leftover "+rel)
	}
	return nil
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// prune decides every task of tasks/ and acts on those the policy
// summarises or removes, in batches of at most maxPending (see flush).
func (r *run) prune(ctx context.Context) error {
	tasks, err := r.p.Root.Open("tasks")
	if err != nil {
		return fmt.Errorf("open tasks directory: %w", err)
	}
	defer tasks.Close()
	r.tasksDir = tasks
	err = r.eachEntry(ctx, func(e fs.DirEntry) {
		if ctx.Err() != nil {
			return
		}
		n := e.Name()
		if n[0] == '.' || !e.IsDir() || r.moved[n] {
			return // dot entries, stray files and symlinks are not tasks
		}
		if !vocab.ValidID(n) {
			r.record(Decision{TaskID: n, Action: Skip, Reason: "not a valid task id"})
			return
		}
		r.task(n)
	})
	// The batch in hand is finished even when ctx is done: it holds locks
	// and half-built summaries, and is short.
	r.flush()
	if r.del != nil {
		close(r.del)
		r.delWG.Wait()
	}
	return err
}

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
	d Decision
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
		r.fail(Decision{TaskID: id}, err)
		return
	}
	d := r.decide(info)
	if d.Action == Keep || d.Action == Skip {
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
			r.record(Busy(d, h))
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
			r.record(Busy(d, te.Holder))
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
	if d = r.decide(info); d.Action == Keep || d.Action == Skip {
		lk.Release()
		r.record(d)
		return
	}
	if d.Action == Summarize {
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
func (r *run) tidy(id string, d Decision) {
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
				r.record(Busy(d, h))
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
				r.record(Busy(d, te.Holder))
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
		r.fail(Decision{TaskID: id}, err)
		return
	}
	info, err := ReadTaskInfo(r.p.Root, id)
	if err != nil {
		r.fail(Decision{TaskID: id}, err)
		return
	}
	d := r.decide(info)
	if d.Action != Keep && d.Action != Skip {
		d.Action, d.Reason = Skip, "changed while being judged; "+string(d.Action)+" at a later run: "+d.Reason
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
		if pt.d.Action == Summarize {
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
				if pt.d.Action == Summarize {
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
			if _, err := root.Lstat(path.Join("tasks", pt.d.TaskID)); pt.d.Action == Summarize && err == nil {
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
		if pt.d.Action == Summarize {
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
func (r *run) decide(info TaskInfo) Decision {
	d := Decide(info, r.p.Policy, r.now)
	if info.StateErr != "" {
		d.Action = Skip
	}
	return d
}

// Busy is d skipped because the task's lock is held by h, saying what
// it would have done.
func Busy(d Decision, h *locking.Holder) Decision {
	d.Reason = fmt.Sprintf("busy: task lock held by %s; would %s: %s", h, d.Action, d.Reason)
	d.Action = Skip
	return d
}

// Failed is d skipped because handling it failed with err, and the
// error's message for the report.
func Failed(d Decision, err error) (Decision, string) {
	what := "handle"
	if d.Action == Summarize || d.Action == Remove {
		what = string(d.Action)
	}
	msg := fmt.Sprintf("%s task %s: %v", what, d.TaskID, err)
	d.Action, d.Reason = Skip, "failed: "+msg
	return d, msg
}

// fail records a task that could not be handled as skipped, and the error.
func (r *run) fail(d Decision, err error) {
	d, msg := Failed(d, err)
	r.addError(msg)
	r.record(d)
}

// record files d under its outcome and reports progress.
func (r *run) record(d Decision) { r.rep.Record(d, r.p.DiscardDecisions, r.p.OnProgress) }

// finish sorts the report's lists by task id.
func finish(rep *Report) {
	for _, l := range []*[]Decision{&rep.Kept, &rep.Summarized, &rep.Removed, &rep.Skipped} {
		slices.SortFunc(*l, func(a, b Decision) int { return strings.Compare(a.TaskID, b.TaskID) })
	}
}

// buildSummary builds tasks/.prune-<id>: hard links of the summary files
// and of every lock file of .locks/. The caller holds the task's lock.
func (r *run) buildSummary(id string, perm fs.FileMode) error {
	root := r.p.Root
	src := path.Join("tasks", id)
	tmp := path.Join("tasks", prunePrefix+id)
	// Recovery has cleared every .prune-* of earlier runs, so tmp is
	// normally absent; probing first would wait on tasks/ like a change.
	err := mkdirPerm(root, tmp, perm)
	if errors.Is(err, fs.ErrExist) {
		if err = root.RemoveAll(tmp); err != nil {
			return fmt.Errorf("clear %s: %w", tmp, err)
		}
		err = mkdirPerm(root, tmp, perm)
	}
	if err != nil {
		return err
	}
	r.step("summarize: summary directory created")
	for _, f := range summaryFiles {
		if err := linkRegular(root, path.Join(src, f), path.Join(tmp, f)); err != nil {
			return err
		}
		r.step("summarize: linked a summary file")
	}
	// Every lock file of the task moves with it as the same inode: a
	// holder or waiter of the old path still excludes users of the new.
	locksPerm := perm
	if fi, err := root.Lstat(path.Join(src, ".locks")); err == nil {
		locksPerm = fi.Mode().Perm()
	}
	if err := mkdirPerm(root, path.Join(tmp, ".locks"), locksPerm); err != nil {
		return err
	}
	return linkDir(root, path.Join(src, ".locks"), path.Join(tmp, ".locks"))
}

// syncSummary makes a built summary durable: its .locks/ and then the
// summary directory itself are fsynced.
func syncSummary(root *os.Root, tmp string) error {
	if err := atomicfile.SyncDir(root, path.Join(tmp, ".locks")); err != nil {
		return err
	}
	return atomicfile.SyncDir(root, tmp)
}

// swap puts the durable summary tasks/.prune-<id> in the place of
// tasks/<id> and returns where the old tree now is. The caller holds the
// task's lock.
func (r *run) swap(id string) (old string, err error) {
	if !r.noExchange {
		exchange := renameExchange
		if r.p.exchange != nil {
			exchange = r.p.exchange
		}
		err = exchange(r.tasksDir, id, prunePrefix+id)
		if err == nil {
			r.step("summarize: swapped")
			return path.Join("tasks", prunePrefix+id), nil // the old tree
		}
		if !errors.Is(err, errUnsupported) {
			return "", fmt.Errorf("swap in summary: %w", err)
		}
		r.noExchange = true
	}
	old = path.Join("tasks", trashPrefix+id)
	if err := r.swapByRenames(id, old); err != nil {
		return "", fmt.Errorf("swap in summary: %w", err)
	}
	r.step("summarize: swapped")
	return old, nil
}

// swapByRenames is the fallback of the atomic swap: move the task to trash,
// then the summary into place. recover finishes the second step after a
// crash between the two.
func (r *run) swapByRenames(id, trash string) error {
	root := r.p.Root
	src := path.Join("tasks", id)
	tmp := path.Join("tasks", prunePrefix+id)
	if err := renameClearing(root, src, trash); err != nil {
		return err
	}
	r.step("summarize: task moved to trash")
	if err := root.Rename(tmp, src); err != nil {
		if rerr := root.Rename(trash, src); rerr != nil {
			return fmt.Errorf("%w (recovery will move %s into place)", err, tmp)
		}
		return err
	}
	if r.moved == nil {
		r.moved = make(map[string]bool)
	}
	r.moved[id] = true
	return nil
}

// trash renames tasks/<id> to tasks/.trash-<id>, the commit point of a
// removal, and returns the new name. The caller holds the task's lock.
func (r *run) trash(id string) (string, error) {
	root := r.p.Root
	trash := path.Join("tasks", trashPrefix+id)
	if err := renameClearing(root, path.Join("tasks", id), trash); err != nil {
		return "", err
	}
	r.step("remove: task moved to trash")
	return trash, nil
}

// renameClearing renames the directory src to dst, first deleting
// whatever stands at dst (the leftover of a failed step) if the rename
// finds it in the way. Renaming straight away spares the usual case, where
// dst is absent, a lookup that waits on the parent directory.
func renameClearing(root *os.Root, src, dst string) error {
	err := root.Rename(src, dst)
	if err == nil || !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.ENOTDIR) {
		return err
	}
	if _, lerr := root.Lstat(dst); lerr != nil {
		return err // dst is not what stood in the way
	}
	if err := root.RemoveAll(dst); err != nil {
		return fmt.Errorf("clear %s: %w", dst, err)
	}
	return root.Rename(src, dst)
}

// removeTree deletes the tree at name, keeping its top directory open
// until the tree is gone. The kernel frees a directory's blocks when its
// last reference drops; removing a directory that is not open frees them
// inside rmdir, with its parent locked, and on a filesystem mounted with
// discard that means waiting on the disk with tasks/ locked, stalling
// every other change to tasks/. With the directory open, its blocks are
// freed when it is closed, with nothing locked.
func removeTree(root *os.Root, name string) error {
	if openWhileRemoving {
		if d, err := root.Open(name); err == nil {
			defer d.Close()
		}
	}
	return root.RemoveAll(name)
}

// mkdirPerm creates dir with exactly perm, whatever the umask.
func mkdirPerm(root *os.Root, dir string, perm fs.FileMode) error {
	if err := root.Mkdir(dir, perm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := root.Chmod(dir, perm); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// linkRegular hard-links src to dst if src is a regular file; anything
// else (missing, a symlink, a FIFO) is left out of the summary.
func linkRegular(root *os.Root, src, dst string) error {
	fi, err := root.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if err := root.Link(src, dst); err != nil {
		return fmt.Errorf("link %s: %w", src, err)
	}
	return nil
}

// linkDir hard-links every regular file of srcDir into dstDir.
func linkDir(root *os.Root, srcDir, dstDir string) error {
	d, err := root.Open(srcDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", srcDir, err)
	}
	defer d.Close()
	for {
		batch, err := d.ReadDir(dirBatch)
		for _, e := range batch {
			if e.Type().IsRegular() {
				if err := root.Link(path.Join(srcDir, e.Name()), path.Join(dstDir, e.Name())); err != nil {
					return fmt.Errorf("link %s: %w", path.Join(srcDir, e.Name()), err)
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", srcDir, err)
		}
	}
}
