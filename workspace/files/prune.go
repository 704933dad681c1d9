package files

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
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
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
	Policy retention.Policy
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
	OnProgress func(retention.Decision)
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
func (p *Pruner) Run(ctx context.Context) (retention.Report, error) {
	rep := retention.Report{DryRun: p.DryRun}
	if err := retention.Validate(p.Policy); err != nil {
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
				return rep, fmt.Errorf("%w: %w", retention.ErrCleanupRunning, err)
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
	rep     *retention.Report
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
			r.record(retention.Decision{TaskID: n, Action: retention.Skip, Reason: "not a valid task id"})
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
