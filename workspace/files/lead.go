package files

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/fscheck"
)

// Leading the tree: one daemon per root holds an exclusive flock on
// <root>/.workspaced.lock for as long as it serves. The kernel releases it
// when the process dies, so the tree needs no lease and no fencing: a
// leadership on files is never lost while its process lives.

// LockName is the daemon's lock file, relative to the root.
const LockName = ".workspaced.lock"

// LockPath is the daemon lock file of a root directory.
func LockPath(root string) string { return filepath.Join(root, LockName) }

// daemonAgent names the daemon in the lock holder records it leaves.
const daemonAgent = "workspaced-daemon"

// DefaultGrace is how long a marker that does not parse may still be being
// written before it is rejected.
const DefaultGrace = 5 * time.Second

// Errors of serving a tree.
var (
	// ErrAlreadyServing: another daemon holds the root's lock.
	ErrAlreadyServing = errors.New("another daemon is serving this root")
	// ErrUnsafeFilesystem: the root is on NFS, SMB or FUSE and Strict is set.
	ErrUnsafeFilesystem = fscheck.ErrUnsafe
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

// ServeOptions are the settings of a tree's single writer that only a
// tree has.
type ServeOptions struct {
	// Grace is how long a marker that does not parse (by its mtime) may
	// still be being written before it is rejected (zero: the settings'
	// daemon grace, else DefaultGrace).
	Grace time.Duration
	// Logger receives what the commit path has to say (nil: discarded).
	Logger *slog.Logger
}

// SetServeOptions sets the options of the tree's single writer. Call it
// before the daemon starts.
func (s *Store) SetServeOptions(o ServeOptions) { s.serve = o }

func (s *Store) grace() time.Duration {
	return firstPositive(s.serve.Grace, time.Duration(s.Settings().Daemon.Grace), DefaultGrace)
}

// discard is the logger of a store given none.
var discard = slog.New(slog.DiscardHandler)

func (s *Store) log() *slog.Logger {
	if s.serve.Logger == nil {
		return discard
	}
	return s.serve.Logger
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

// Lead takes the root's lock (workspace.Served): a *ServingError naming
// the pid serving when another daemon holds it. opt.Standby is refused: a
// directory has one daemon, its lock held by the kernel. On NFS, SMB or
// FUSE it warns, and refuses with ErrUnsafeFilesystem when opt.Strict.
func (s *Store) Lead(ctx context.Context, opt workspace.LeadOptions) (workspace.Leadership, error) {
	if opt.Standby {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve",
			Msg:  "a standby needs a database root: a directory has one daemon, its lock held by the kernel",
			Hint: "run serve without --standby; a second daemon of this root exits 4"}
	}
	lockPath := LockPath(s.Dir())
	lk, err := locking.TryAcquire(lockPath, locking.Options{Agent: daemonAgent, Perm: s.FilePerm()})
	if err != nil {
		if errors.Is(err, locking.ErrLocked) {
			se := &ServingError{Root: s.Dir()}
			if h, _ := locking.ReadHolder(lockPath); h != nil {
				se.PID = h.PID
			}
			return nil, se
		}
		return nil, fmt.Errorf("take daemon lock: %w", err)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if fsName, unsafe, err := CheckFilesystem(s.Dir()); err != nil {
		log.Warn("cannot tell the filesystem type", "root", s.Dir(), "err", err)
	} else if unsafe {
		if opt.Strict {
			lk.Release()
			return nil, fmt.Errorf("%w: %s is on %s, where rename, flock or inotify cannot be trusted; move it to a local filesystem or run without --strict",
				ErrUnsafeFilesystem, s.Dir(), fsName)
		}
		log.Warn("workspace on a network or FUSE filesystem: rename, flock and inotify may not be trustworthy", "root", s.Dir(), "fs", fsName)
	}
	if err := s.Root().MkdirAll("tasks", s.DirPerm()); err != nil {
		lk.Release()
		return nil, fmt.Errorf("create tasks/: %w", err)
	}
	log.Info("serving the tree", "grace", s.grace(), "root", s.Dir())
	return &flockLead{lk: lk, done: make(chan struct{})}, nil
}

// flockLead is a leadership held by a flock: never lost while the
// process lives.
type flockLead struct {
	lk   *locking.Lock
	done chan struct{}
}

func (l *flockLead) Epoch() int64          { return 0 }
func (l *flockLead) Done() <-chan struct{} { return l.done }
func (l *flockLead) Err() error            { return nil }
func (l *flockLead) Release(context.Context) error {
	return l.lk.Release()
}

// Tasks lists every task directory of the tree (workspace.Served): a task
// cannot be told finished without reading its state, which the committer
// does only when the directory changed.
func (s *Store) Tasks(ctx context.Context) ([]string, error) { return s.TaskIDs(ctx) }

// DropNamedMarker drops a marker of kind under a name of the caller's
// choosing, as an agent in any language does (the CLI's markers get a new
// random name each). A name the journal already holds is not refused
// here: the daemon refuses it (see names.go).
func (s *Store) DropNamedMarker(ctx context.Context, taskID, kind, name string, m workspace.Marker) error {
	if k, ok := workspace.IsMarkerName(name); !ok || k != kind || path.Base(name) != name {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "drop marker " + name, Msg: "not the name of a " + kind + " marker"}
	}
	if _, err := s.GetTask(ctx, taskID); err != nil {
		return err
	}
	return s.WriteJSON(path.Join(workspace.TaskDir(taskID), name), m)
}
