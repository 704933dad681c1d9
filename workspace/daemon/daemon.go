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
//     and state.json records the last sequence it reflects. On start every
//     task is brought up to date from its journal; a record that cannot be
//     read or written holds its task back until it can, so no marker is
//     skipped. (Durability across power loss assumes a local filesystem that honours
//     fsync and journals a rename atomically: ext4, xfs, btrfs.)
//   - state.json is only ever replaced atomically (temporary file, fsync,
//     rename, directory fsync), validated against its schema first, and the
//     previous version is kept in backups/ (hard-linked) before each write;
//     backups/ is pruned and fsynced when the burst settles. A state.json
//     that does not parse or validate is replaced by the newest valid
//     backup plus the journal past it (or by a replay of the whole journal
//     when no backup is valid), with a state_restored event.
//   - A burst of markers of one task is applied in one state write (group
//     commit), in the order they were dropped: it is journaled in chunks
//     of up to 32 markers, one fsync of the journal each, while the next
//     chunk is read and examined, and the state is written once no marker
//     is left, or every 128 markers (see take.go).
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
//
// # The code
//
// One task value (task.go) owns everything the daemon knows about a task,
// and the files follow a marker's way through it: the watch loop
// (loop.go) wakes the task, which loads its state (recover.go), takes its
// markers into the journal (take.go, judging each with marker.go) and
// commits them through the state machine (commit.go); settle.go makes the
// journal durable a moment later. journal.go is the journal's layout,
// delta.go the check of only what a commit changes, live.go what the
// daemon tells status over its socket.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
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
	// durable and its taken markers removed (see settle.go).
	DefaultSettle = time.Second
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
	// Ready, if set, is called once the start-up scan is done and the
	// watches are in place.
	Ready func()
}

// daemonAgent names the daemon in the lock holder records it leaves.
const daemonAgent = "workspaced-daemon"

// Daemon is the single writer of one root. Create it with New and run it
// with Run; a Daemon runs once.
type Daemon struct {
	cfg         Config
	ws          *workspace.Workspace
	log         *slog.Logger
	now         func() time.Time
	friction    *friction.Log
	frictionCfg friction.Config

	// tasks is every task the daemon knows, by id: the one map keyed by
	// task id. Only the goroutine running the loop touches it.
	tasks map[string]*task
}

// New opens the workspace at cfg.Root and fills the defaults. It takes no
// lock and starts nothing.
func New(cfg Config) (*Daemon, error) {
	ws, err := workspace.Open(cfg.Root, workspace.Options{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	s := ws.Settings()
	cfg.Rescan = firstPositive(cfg.Rescan, time.Duration(s.Daemon.Rescan), DefaultRescan)
	cfg.Grace = firstPositive(cfg.Grace, time.Duration(s.Daemon.Grace), DefaultGrace)
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
	d := &Daemon{cfg: cfg, ws: ws, log: cfg.Logger, now: cfg.Now, tasks: map[string]*task{}}
	d.friction = ws.FrictionLog(daemonAgent)
	d.friction.Now = cfg.Now
	d.frictionCfg = ws.FrictionConfig()
	return d, nil
}

// firstPositive returns the first of ds that is positive.
func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// Config returns the effective configuration.
func (d *Daemon) Config() Config { return d.cfg }

// Workspace is the daemon's open workspace.
func (d *Daemon) Workspace() *workspace.Workspace { return d.ws }

// Close releases the workspace. Call it after Run returns.
func (d *Daemon) Close() error { return d.ws.Close() }

// Run serves the root until ctx is done, then returns nil. It fails at
// once with a *ServingError when another daemon serves the root, and with
// ErrUnsafeFilesystem on NFS, SMB or FUSE when Strict is set. One
// goroutine (the caller's) owns the watch loop.
func (d *Daemon) Run(ctx context.Context) error {
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
	l := &loop{d: d, w: w, settled: make(chan []unsettled, 1)}
	l.live.Store(&Live{Stopped: []StoppedTask{}})
	if ln, err := listenLive(d.ws.Dir()); err != nil {
		d.log.Warn("no status socket: status will not show what the daemon is retrying", "err", err)
	} else {
		defer ln.Close()
		pid := os.Getpid()
		go serveLive(ln, func() Live { r := *l.live.Load(); r.PID = pid; return r })
	}
	return l.run(ctx)
}

// checkTimeouts records friction for subtasks in progress too long.
func (d *Daemon) checkTimeouts(ctx context.Context) {
	var items []friction.InProgress
	for _, t := range d.tasks {
		items = append(items, t.progress...)
	}
	if _, err := workspace.RecordTimeouts(ctx, frictionOf{d}, daemonAgent, items, d.now().UTC().Truncate(time.Millisecond)); err != nil {
		d.log.Warn("record timeout friction", "err", err)
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
