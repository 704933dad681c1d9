// Package daemon is the single writer of a workspace: `workspaced serve`.
// It turns the .claim.* and .done.* markers agents drop into task
// directories into journal records and a true state.json for every task.
//
// # Guarantees
//
//   - One daemon per root: Run holds an exclusive flock on
//     <root>/.workspaced.lock for its whole life; a second Run fails at
//     once with a *ServingError naming the pid serving.
//   - Every marker is applied exactly once, whatever crashes when: taking a
//     marker is one rename into journal/ under a name that carries its
//     sequence number (see journal.go); the records of the markers taken
//     together are then written atomically in one file and made durable,
//     and state.json records the last sequence it reflects. On start every task is brought up to date from its journal.
//     (Durability across power loss assumes a local filesystem that honours
//     fsync and journals a rename atomically: ext4, xfs, btrfs.)
//   - state.json is only ever replaced atomically (temporary file, fsync,
//     rename, directory fsync), validated against its schema first, and the
//     previous version is kept in backups/ (hard-linked) before each write;
//     backups/ is pruned and fsynced when the burst settles. A state.json
//     that does not parse or validate is replaced by the newest valid
//     backup plus the journal past it (or by a replay of the whole journal
//     when no backup is valid), with a state_restored event.
//   - A burst of markers of one task is applied in one state write (group
//     commit) per chunk of up to 32 markers, in the order they were
//     dropped, so a large burst costs a fixed number of fsyncs per chunk
//     and its first markers do not wait for its last ones. While one chunk
//     is made durable the next is read and examined (see takeMarkers).
//   - No marker is left behind by a missed event: tasks/ and every active
//     task directory are watched, and the whole tree is rescanned on start,
//     on watcher overflow or error, and every Rescan.
//   - A bad agent file never stops the daemon: a marker that is not a
//     regular file, is oversized or too deeply nested, or names a product
//     that is missing, unsafe, outside its task or schema-invalid, is
//     journaled as rejected with its reason (after the grace period when it
//     may still be being written) and the state records the error.
//
// Events are appended to events.log after the state write and are a feed,
// not a record: a crash between the two loses that burst's events.
package daemon

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Defaults for Config fields left zero (workspace.json daemon settings
// come first when the caller passes them).
const (
	// DefaultRescan is how often the whole tree is rescanned.
	DefaultRescan = 30 * time.Second
	// DefaultGrace is how long a marker that does not parse may still be
	// being written before it is rejected.
	DefaultGrace = 5 * time.Second
	// DefaultCleanupInterval is how often retention runs.
	DefaultCleanupInterval = 24 * time.Hour
	// DefaultParallel is how many tasks are processed at once.
	DefaultParallel = 8
	// DefaultSettle is how long after a burst its records are made
	// durable and the taken markers removed (see settle).
	DefaultSettle = time.Second
)

// When settle removes files (see settle): only once the daemon has not
// set about taking markers for settleQuiet, except that a task with
// settleBacklog taken markers waiting has the oldest removed, down to
// half of that, at once.
const (
	settleQuiet   = 250 * time.Millisecond
	settleBacklog = 4096
)

// LockName is the daemon's lock file, relative to the root.
const LockName = ".workspaced.lock"

// Errors of this package.
var (
	// ErrAlreadyServing: another daemon holds the root's lock.
	ErrAlreadyServing = errors.New("another daemon is serving this root")
	// ErrUnsafeFilesystem: the root is on NFS, SMB or FUSE and Strict is set.
	ErrUnsafeFilesystem = errors.New("filesystem not safe for the workspace")
)

// ServingError says which process serves the root. It matches
// ErrAlreadyServing and workspace.ErrConflict (CLI exit 4).
type ServingError struct {
	Root string
	PID  int // 0 when the holder record could not be read
}

func (e *ServingError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("another daemon (pid %d) is serving %s", e.PID, e.Root)
	}
	return "another daemon is serving " + e.Root
}

// Is matches ErrAlreadyServing and workspace.ErrConflict.
func (e *ServingError) Is(target error) bool {
	return target == ErrAlreadyServing || target == workspace.ErrConflict
}

// Config configures a Daemon. Zero durations take the workspace.json
// daemon settings, then the Default… constants; CleanupInterval < 0 turns
// cleanup off.
type Config struct {
	// Root is the workspace root directory.
	Root string
	// Rescan is the period of the full rescan.
	Rescan time.Duration
	// Grace is how long an unparseable marker may wait, by its mtime.
	Grace time.Duration
	// CleanupInterval is the period of the retention run; < 0 is off.
	CleanupInterval time.Duration
	// Strict refuses NFS, SMB and FUSE instead of warning.
	Strict bool
	// Parallel bounds how many tasks are processed at once (zero:
	// DefaultParallel).
	Parallel int
	// Logger receives structured logs (nil: discarded).
	Logger *slog.Logger
	// Now is the clock of journal stamps and grace periods (nil: time.Now).
	Now func() time.Time
	// OnCommit, if set, is called after every state write, from the
	// goroutine that wrote it (benchmarks and tests use it).
	OnCommit func(taskID string, st workspace.State)
	// Ready, if set, is called once the start-up scan is done and the
	// watches are in place.
	Ready func()
}

// Daemon is the single writer of one root. Create it with New and run it
// with Run; a Daemon runs once.
type Daemon struct {
	cfg         Config
	ws          *workspace.Workspace
	log         *slog.Logger
	now         func() time.Time
	friction    *friction.Log
	frictionCfg friction.Config
	ctx         context.Context

	mu        sync.Mutex // guards cache, progress and unsettled (tasks are processed in parallel)
	cache     map[string]*taskCache
	progress  map[string][]friction.InProgress
	unsettled map[string]*unsettled // what settle has left to do, by task

	// started anchors lastBusy: when, after it, the daemon last set about
	// taking markers; busy counts those times. settle reads both to keep
	// out of the way of bursts.
	started  time.Time
	lastBusy atomic.Int64
	busy     atomic.Uint64
	backlog  int // settleBacklog

	spareMu sync.Mutex // guards spares
	spares  spares
}

// New opens the workspace at cfg.Root and fills the defaults. It takes no
// lock and starts nothing.
func New(cfg Config) (*Daemon, error) {
	ws, err := workspace.Open(cfg.Root, workspace.Options{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	s := ws.Settings()
	if cfg.Rescan <= 0 {
		cfg.Rescan = time.Duration(s.Daemon.Rescan)
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Duration(s.Daemon.Grace)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = time.Duration(s.Daemon.CleanupInterval)
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = DefaultCleanupInterval
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Daemon{cfg: cfg, ws: ws, log: cfg.Logger, now: cfg.Now,
		cache: map[string]*taskCache{}, progress: map[string][]friction.InProgress{}, unsettled: map[string]*unsettled{}, started: time.Now(), backlog: settleBacklog, ctx: context.Background(),
		spares: spares{sets: map[string]*spareSet{}, order: list.New()}}
	d.friction = ws.FrictionLog(daemonAgent)
	d.friction.Now = cfg.Now
	d.frictionCfg = ws.FrictionConfig()
	return d, nil
}

// Config returns the effective configuration.
func (d *Daemon) Config() Config { return d.cfg }

// Workspace is the daemon's open workspace.
func (d *Daemon) Workspace() *workspace.Workspace { return d.ws }

// Close releases the workspace. Call it after Run returns.
func (d *Daemon) Close() error {
	d.dropAllSpares()
	return d.ws.Close()
}

// Run serves the root until ctx is done, then returns nil. It fails at
// once with a *ServingError when another daemon serves the root, and with
// ErrUnsafeFilesystem on NFS, SMB or FUSE when Strict is set. One
// goroutine (the caller's) owns the watch loop.
func (d *Daemon) Run(ctx context.Context) error {
	d.ctx = ctx
	lockPath := LockPath(d.ws.Dir())
	lk, err := locking.TryAcquire(lockPath, locking.Options{Agent: daemonAgent, Perm: d.ws.FilePerm()})
	if err != nil {
		if errors.Is(err, locking.ErrLocked) {
			se := &ServingError{Root: d.ws.Dir()}
			if h, _ := locking.ReadHolder(lockPath); h != nil {
				se.PID = h.PID
			}
			return se
		}
		return fmt.Errorf("take daemon lock: %w", err)
	}
	defer lk.Release()

	if fsName, unsafe, err := CheckFilesystem(d.ws.Dir()); err != nil {
		d.log.Warn("cannot tell the filesystem type", "root", d.ws.Dir(), "err", err)
	} else if unsafe {
		if d.cfg.Strict {
			return fmt.Errorf("%w: %s is on %s, where rename, flock or inotify cannot be trusted; move it to a local filesystem or run without --strict",
				ErrUnsafeFilesystem, d.ws.Dir(), fsName)
		}
		d.log.Warn("workspace on a network or FUSE filesystem: rename, flock and inotify may not be trustworthy", "root", d.ws.Dir(), "fs", fsName)
	}

	if err := d.ws.Root().MkdirAll("tasks", d.ws.DirPerm()); err != nil {
		return fmt.Errorf("create tasks/: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	defer w.Close()
	l := &loop{d: d, w: w, watched: map[string]bool{}, finished: map[string]bool{}, waiting: map[string]time.Time{}}
	return l.run(ctx)
}

// loop is the state of the watch loop, touched only by the goroutine
// running it.
type loop struct {
	d        *Daemon
	w        *fsnotify.Watcher
	watched  map[string]bool      // task ids with a watch
	finished map[string]bool      // task ids known finished (not watched)
	waiting  map[string]time.Time // task id → when its waiting markers pass their grace
	cleaning bool
	cleanWG  sync.WaitGroup
}

func (l *loop) run(ctx context.Context) error {
	d := l.d
	tasksDir := filepath.Join(d.ws.Dir(), "tasks")
	if err := l.w.Add(tasksDir); err != nil {
		return fmt.Errorf("watch %s: %w", tasksDir, err)
	}
	d.log.Info("serving", "root", d.ws.Dir(), "rescan", d.cfg.Rescan, "grace", d.cfg.Grace, "cleanup_interval", d.cfg.CleanupInterval)
	l.fullScan(ctx, true)
	d.log.Info("ready", "tasks_watched", len(l.watched), "tasks_finished", len(l.finished))
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
	grace := time.NewTimer(time.Hour)
	grace.Stop()
	defer grace.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	settleArmed := false
	// Settling runs beside the loop (it may wait for the disk for a while)
	// and never twice at once; a clean stop waits for it and settles what
	// is left.
	settling := false
	settleDone := make(chan struct{}, 1)
	var settleWG sync.WaitGroup
	defer func() {
		settleWG.Wait()
		l.settleAll(context.Background(), true)
		d.dropAllSpares()
	}()
	dirty := map[string]wake{}
	for {
		l.armGrace(grace)
		if !settleArmed && len(d.pendingSettle()) > 0 {
			settle.Reset(DefaultSettle)
			settleArmed = true
		}
		select {
		case <-ctx.Done():
			d.log.Info("stopping", "reason", context.Cause(ctx))
			return nil
		case ev, ok := <-l.w.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			rescanAll := l.note(ev, dirty)
			// Coalesce: take whatever else is already queued.
		drain:
			for {
				select {
				case ev, ok := <-l.w.Events:
					if !ok {
						break drain
					}
					rescanAll = l.note(ev, dirty) || rescanAll
				default:
					break drain
				}
			}
			if rescanAll {
				clear(dirty)
				l.fullScan(ctx, false)
				continue
			}
			l.processAll(ctx, dirty, false)
			clear(dirty)
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
		case <-grace.C:
			now := d.now()
			due := map[string]wake{}
			for id, t := range l.waiting {
				if !t.After(now) {
					due[id] = wake{all: true}
					delete(l.waiting, id)
				}
			}
			l.processAll(ctx, due, false)
		case <-cleanupC:
			if !l.cleaning {
				l.cleaning = true
				l.cleanWG.Add(1)
				go func() {
					defer l.cleanWG.Done()
					d.cleanup(ctx)
					cleanDone <- struct{}{}
				}()
			}
		case <-cleanDone:
			l.cleaning = false
		case <-settle.C:
			settleArmed = false
			if !settling {
				settling = true
				settleWG.Add(1)
				go func() {
					defer settleWG.Done()
					l.settleAll(ctx, false)
					settleDone <- struct{}{}
				}()
			}
		case <-settleDone:
			settling = false
		}
	}
}

// settleAll settles every task with settle work left (see settle for
// force). It is safe to call beside the processing of tasks.
func (l *loop) settleAll(ctx context.Context, force bool) {
	d := l.d
	for _, id := range d.pendingSettle() {
		if err := d.settle(id, force); err != nil && ctx.Err() == nil {
			d.log.Warn("make journal durable", "task", id, "err", err)
		}
	}
}

// armGrace sets the grace timer to the earliest waiting marker.
func (l *loop) armGrace(t *time.Timer) {
	var first time.Time
	for _, w := range l.waiting {
		if first.IsZero() || w.Before(first) {
			first = w
		}
	}
	t.Stop()
	if !first.IsZero() {
		// A little past the deadline, so the marker is old enough by then.
		t.Reset(max(first.Sub(l.d.now()), 0) + 10*time.Millisecond)
	}
}

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

// note records what an event means: a task to look at, or (for a new
// task directory) a watch to add and a scan. It reports whether a full
// rescan is needed.
func (l *loop) note(ev fsnotify.Event, dirty map[string]wake) bool {
	d := l.d
	rel, err := filepath.Rel(filepath.Join(d.ws.Dir(), "tasks"), ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	id := parts[0]
	if workspace.ValidateID("task id", id) != nil {
		return false
	}
	if len(parts) == 1 {
		// tasks/<id> itself: a new task directory (watch, then scan), or
		// one removed.
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			l.drop(id)
			return false
		}
		if ev.Has(fsnotify.Create) {
			l.watch(id)
			delete(l.finished, id)
			dirty[id] = wake{all: true}
		}
		return false
	}
	if len(parts) != 2 {
		return false
	}
	name := parts[1]
	if _, ok := workspace.IsMarkerName(name); ok && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write)) {
		w := dirty[id]
		if !w.all && len(w.names) < maxHints {
			w.names = append(w.names, name)
		} else {
			w = wake{all: true}
		}
		dirty[id] = w
	} else if name == "task.json" && ev.Has(fsnotify.Create) {
		dirty[id] = wake{all: true}
	}
	return false
}

func (l *loop) watch(id string) {
	if l.watched[id] {
		return
	}
	p := filepath.Join(l.d.ws.Dir(), "tasks", id)
	if err := l.w.Add(p); err != nil {
		// Without a watch the task is still served by the rescans.
		l.d.log.Warn("cannot watch task directory; relying on rescans", "task", id, "err", err)
		return
	}
	l.watched[id] = true
}

func (l *loop) unwatch(id string) {
	if !l.watched[id] {
		return
	}
	_ = l.w.Remove(filepath.Join(l.d.ws.Dir(), "tasks", id))
	delete(l.watched, id)
}

func (l *loop) drop(id string) {
	l.unwatch(id)
	delete(l.finished, id)
	delete(l.waiting, id)
	l.d.forget(id)
}

// fullScan looks at every task: it adds the watches missing, then
// processes each task (recover: a full check of state and journal, as on
// start). Tasks known to be finished are only checked for markers.
func (l *loop) fullScan(ctx context.Context, recover bool) {
	d := l.d
	ids, err := d.ws.TaskIDs()
	if err != nil {
		d.log.Error("list tasks", "err", err)
		return
	}
	present := make(map[string]bool, len(ids))
	todo := make(map[string]wake, len(ids))
	for _, id := range ids {
		present[id] = true
		if !l.finished[id] {
			l.watch(id) // the watch first, then the scan
		}
		todo[id] = wake{all: true}
	}
	for id := range l.watched {
		if !present[id] {
			l.drop(id)
		}
	}
	l.processAll(ctx, todo, recover)
	d.log.Debug("scanned", "tasks", len(ids), "watched", len(l.watched))
}

// processAll processes the tasks in ids, up to Parallel at once, and
// applies the outcomes to the loop's maps.
func (l *loop) processAll(ctx context.Context, ids map[string]wake, recover bool) {
	if len(ids) == 0 {
		return
	}
	d := l.d
	outs := make(chan outcome, len(ids))
	sem := make(chan struct{}, d.cfg.Parallel)
	var wg sync.WaitGroup
	for id, w := range ids {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs <- d.processTask(ctx, id, w, recover)
		}()
	}
	wg.Wait()
	close(outs)
	for o := range outs {
		switch {
		case o.gone:
			l.drop(o.id)
			continue
		case o.err != nil:
			if ctx.Err() == nil {
				d.log.Error("process task", "task", o.id, "err", o.err)
			}
		}
		if o.taken > 0 {
			d.log.Info("markers taken", "task", o.id, "count", o.taken)
		}
		if !o.waitTill.IsZero() {
			l.waiting[o.id] = o.waitTill
		} else {
			delete(l.waiting, o.id)
		}
		if o.finished && o.waitTill.IsZero() {
			l.finished[o.id] = true
			l.unwatch(o.id)
		} else if !o.finished {
			delete(l.finished, o.id)
			l.watch(o.id)
		}
	}
}

// cached returns the cache of a task, or nil.
func (d *Daemon) cached(id string) *taskCache {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cache[id]
}

func (d *Daemon) remember(id string, c *taskCache) {
	d.mu.Lock()
	finished := vocab.Finished(c.st.Status)
	if finished {
		// Finished tasks take no more work worth caching.
		delete(d.cache, id)
	} else {
		d.cache[id] = c
	}
	d.mu.Unlock()
	if finished {
		d.dropSpares(id)
	}
}

func (d *Daemon) forget(id string) {
	d.mu.Lock()
	delete(d.cache, id)
	delete(d.progress, id)
	d.mu.Unlock()
	d.dropSpares(id)
}

// noteProgress remembers the subtasks in progress of a task, for the
// timeout detector.
func (d *Daemon) noteProgress(id string, st workspace.State, plan *workspace.Plan) {
	var items []friction.InProgress
	for sid, s := range st.Subtasks {
		if s.Status != machine.SubtaskInProgress || s.StartedAt == nil {
			continue
		}
		it := friction.InProgress{TaskID: id, SubtaskID: sid, StartedAt: *s.StartedAt}
		if plan != nil {
			for _, ps := range plan.Subtasks {
				if ps.ID == sid {
					it.Complexity = ps.EstimatedComplexity
				}
			}
		}
		items = append(items, it)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(items) == 0 {
		delete(d.progress, id)
	} else {
		d.progress[id] = items
	}
}

// checkTimeouts records friction for subtasks in progress too long.
func (d *Daemon) checkTimeouts(ctx context.Context) {
	d.mu.Lock()
	var items []friction.InProgress
	for _, its := range d.progress {
		items = append(items, its...)
	}
	d.mu.Unlock()
	fs := friction.DetectTimeouts(items, d.now(), d.frictionCfg)
	if len(fs) == 0 {
		return
	}
	since := d.now().UTC().Truncate(time.Millisecond)
	entries, err := d.friction.Record(ctx, fs)
	if err != nil {
		d.log.Warn("record timeout friction", "err", err)
	}
	tasks := map[string]bool{}
	for _, f := range fs {
		tasks[f.TaskID] = true
	}
	d.noteFriction(entries, since, tasks)
}

// noteFriction writes a friction_recorded event for each entry recorded
// or merged, into the events of the tasks that caused it. An entry is new
// when it was stamped at or after since.
func (d *Daemon) noteFriction(entries []friction.Entry, since time.Time, tasks map[string]bool) {
	for _, e := range entries {
		var ts []string
		for _, t := range e.AffectedTasks {
			if tasks[t] {
				ts = append(ts, t)
			}
		}
		d.ws.NoteFriction(e, !e.Timestamp.Before(since), ts)
	}
}

// cleanup runs retention by the workspace's policy and anonymises the
// removed tasks in the friction log.
func (d *Daemon) cleanup(ctx context.Context) {
	s := d.ws.Settings()
	p := &retention.Pruner{Root: d.ws.Root(), RootDir: d.ws.Dir(), Now: d.now, Agent: daemonAgent,
		Policy: retention.Policy{FullDays: s.Retention.FullDays, SummaryDays: s.Retention.SummaryDays}}
	rep, err := p.Run(ctx)
	if err != nil {
		d.log.Error("cleanup", "err", err)
		return
	}
	var removed []string
	for _, r := range rep.Removed {
		removed = append(removed, r.TaskID)
	}
	if len(removed) > 0 {
		if _, err := d.friction.AnonymizeTasks(ctx, removed); err != nil {
			d.log.Warn("anonymise friction of removed tasks", "err", err)
		}
	}
	for _, e := range rep.Errors {
		d.log.Warn("cleanup", "err", e)
	}
	d.log.Info("cleanup done", "kept", rep.Counts.Kept, "summarized", rep.Counts.Summarized, "removed", rep.Counts.Removed, "skipped", rep.Counts.Skipped)
}

// LockPath is the daemon lock file of a root directory.
func LockPath(root string) string { return filepath.Join(root, LockName) }
