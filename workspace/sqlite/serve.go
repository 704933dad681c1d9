package sqlite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/fscheck"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Serving a workspace on SQLite: the daemon (workspace/daemon) leads by a
// flock of <db>.lock (see the package doc for why not a lease row), wakes
// on a watch of the database's files and a poll (wakeups.go), and commits
// each task in one BEGIN IMMEDIATE transaction (commit.go).

var _ workspace.Served = (*Store)(nil)

// standbyPoll is how often a standby tries the daemon's lock.
const standbyPoll = 100 * time.Millisecond

// leadFile is the daemon's lock: <db>.lock.
func (s *Store) leadFile() string { return s.path + ".lock" }

// DaemonLock is the file whose flock the daemon holds: <db>.lock.
func (s *Store) DaemonLock() string { return s.leadFile() }

// checkFilesystem is fscheck.Check; a test stands in for a
// network filesystem through it.
var checkFilesystem = fscheck.Check

// Lead takes the daemon's lock, <db>.lock, for this process
// (workspace.Served): with opt.Standby it waits while another daemon
// holds it, else it fails with ErrLocked naming the holder. The lock is
// held until Release or the process's end (the kernel drops it); the
// leadership is never lost meanwhile, and its epoch is 0.
//
// A database on NFS, SMB or FUSE is refused with
// fscheck.ErrUnsafe when opt.Strict (SQLite's locks and its
// write-ahead log's shared memory need a local filesystem, as flock does),
// and warned of otherwise, as a tree there is.
func (s *Store) Lead(ctx context.Context, opt workspace.LeadOptions) (workspace.Leadership, error) {
	if opt.Holder == "" {
		host, _ := os.Hostname()
		opt.Holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if err := s.checkLocal(opt); err != nil {
		return nil, err
	}
	if opt.Standby {
		opt.Logger.Info("standby: waiting for the daemon's lock", "lock", s.leadFile())
	}
	for {
		l, err := locking.TryAcquire(s.leadFile(), locking.Options{Agent: opt.Holder})
		if err == nil {
			opt.Logger.Info("took the daemon's lock", "lock", s.leadFile(), "holder", opt.Holder)
			return &flockLead{l: l, done: make(chan struct{})}, nil
		}
		var te *locking.TimeoutError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("serve: take the daemon's lock %s: %w", s.leadFile(), err)
		}
		if !opt.Standby {
			return nil, &workspace.Error{Kind: workspace.ErrLocked, Op: "serve",
				Msg:  "another daemon serves this workspace",
				Err:  te,
				Hint: "stop it first, or run this one as its standby with serve --standby"}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(standbyPoll):
		}
	}
}

// checkLocal refuses (opt.Strict) or warns of a database on a filesystem
// where SQLite's locking cannot be trusted.
func (s *Store) checkLocal(opt workspace.LeadOptions) error {
	name, unsafe, err := checkFilesystem(filepath.Dir(s.path))
	switch {
	case err != nil:
		opt.Logger.Warn("cannot tell the filesystem type", "database", s.path, "err", err)
	case unsafe && opt.Strict:
		return fmt.Errorf("%w: %s is on %s, where SQLite's locks, its write-ahead log and flock cannot be trusted; move it to a local filesystem or run without --strict",
			fscheck.ErrUnsafe, s.path, name)
	case unsafe:
		opt.Logger.Warn("database on a network or FUSE filesystem: SQLite's locks, its write-ahead log and flock may not be trustworthy", "database", s.path, "fs", name)
	}
	return nil
}

// flockLead is a leadership held by a flock (workspace.Leadership).
type flockLead struct {
	l    *locking.Lock
	done chan struct{}
	once sync.Once
	err  error
}

func (f *flockLead) Epoch() int64          { return 0 }
func (f *flockLead) Done() <-chan struct{} { return f.done }
func (f *flockLead) Err() error            { return nil }

// Release gives the lock up, so a standby takes over at once.
func (f *flockLead) Release(context.Context) error {
	f.once.Do(func() { f.err = f.l.Release() })
	return f.err
}

// Tasks lists the tasks the daemon serves (workspace.Served): those with
// markers waiting or no state yet, and those with subtasks in progress
// (whose timeouts it watches).
func (s *Store) Tasks(ctx context.Context) ([]string, error) {
	ids, err := strings1(s.rdb.QueryContext(ctx, `SELECT t.id FROM tasks t LEFT JOIN states s ON s.task_id = t.id
		WHERE s.task_id IS NULL
		   OR instr(s.doc, '"`+machine.SubtaskInProgress+`"') > 0
		   OR EXISTS (SELECT 1 FROM markers m WHERE m.task_id = t.id)
		ORDER BY t.id`))
	if err != nil {
		return nil, fmt.Errorf("list the tasks to serve: %w", err)
	}
	return ids, nil
}

// waitingTasks are the tasks with markers waiting, or with no state yet.
func (s *Store) waitingTasks(ctx context.Context) ([]string, error) {
	return strings1(s.query(ctx, `SELECT DISTINCT task_id FROM markers
		UNION SELECT t.id FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM state_history s WHERE s.task_id = t.id AND backup = 0)`))
}
