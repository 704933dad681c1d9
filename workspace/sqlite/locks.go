package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Named locks on SQLite are flocks of files beside the database, under
// <db>.locks/, named as the file tree names its lock files
// (tasks/<id>/.locks/<name>.lock): a holder that dies, even by SIGKILL,
// never leaves a stale lock, and an agent takes the same lock with its
// own flock. The locks table records, by the same names, the latest
// holder; whether a lock is held now is the kernel's.

// lockFile is where the lock of name is kept: <db>.locks/<name>.
func (s *Store) lockFile(name string) string {
	return filepath.Join(s.path+".locks", filepath.FromSlash(name))
}

// lock takes the flock of name, waiting at most timeout (zero: tries
// once), and records the holder.
func (s *Store) lock(ctx context.Context, name, taskID, lock, agent string, timeout time.Duration) (*locking.Lock, error) {
	file := s.lockFile(name)
	var (
		l   *locking.Lock
		err error
	)
	if timeout <= 0 {
		l, err = locking.TryAcquire(file, locking.Options{Agent: agent})
	} else {
		l, err = locking.Acquire(ctx, file, locking.Options{Agent: agent, Timeout: timeout})
	}
	var te *locking.TimeoutError
	switch {
	case errors.As(err, &te):
		te.Path = name
		return nil, &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + name, Err: te,
			Hint: "another process holds it; retry later, or raise lock_timeout in workspace.json"}
	case errors.Is(err, locking.ErrLocked):
		h, _ := locking.ReadHolder(file)
		return nil, &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + name,
			Err:  &locking.TimeoutError{Path: name, Holder: h},
			Hint: "another process holds it; retry later"}
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	host, _ := os.Hostname()
	h, _ := json.Marshal(locking.Holder{PID: os.Getpid(), Agent: agent, Since: now(), Host: host})
	if _, err := s.exec(ctx, `INSERT INTO locks (name, holder, since, task_id, lock) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, since = excluded.since`,
		name, string(h), ts(now()), taskID, lock); err != nil {
		_ = l.Release()
		return nil, fmt.Errorf("lock %s: record the holder: %w", name, err)
	}
	return l, nil
}

// Locks lists the locks ever taken in the workspace by name, each held or
// not with its latest holder; the daemon's lock comes first.
func (s *Store) Locks(ctx context.Context) ([]workspace.LockInfo, error) {
	out := []workspace.LockInfo{}
	if held, h, err := locking.Held(s.leadFile()); err == nil && (held || h != nil) {
		out = append(out, workspace.LockInfo{Name: "daemon", Held: held, Holder: (*workspace.LockHolder)(h)})
	}
	type row struct{ name, task, lock, holder string }
	rows, err := s.rdb.QueryContext(ctx, "SELECT name, task_id, lock, holder FROM locks ORDER BY name")
	all, err := collect(rows, err, func(r sqlstore.Rows) (row, error) {
		var v row
		return v, r.Scan(&v.name, &v.task, &v.lock, &v.holder)
	})
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	for _, r := range all {
		held, _, err := locking.Held(s.lockFile(r.name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("list locks: %w", err)
		}
		out = append(out, workspace.LockInfo{Name: r.name, TaskID: r.task, Lock: r.lock, Held: held, Holder: (*workspace.LockHolder)(sqlstore.ParseHolder(r.holder))})
	}
	return out, nil
}

// held reports whether a lock is held now, and its latest holder.
func (s *Store) held(name string) (bool, *locking.Holder, error) {
	held, h, err := locking.Held(s.lockFile(name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil, nil
	}
	return held, h, err
}

// Lock takes a flock (sqlstore.Driver).
func (d sqlDriver) Lock(ctx context.Context, name, taskID, lock, agent string, timeout time.Duration) (workspace.Lock, error) {
	l, err := d.s.lock(ctx, name, taskID, lock, agent, timeout)
	if err != nil {
		return nil, err // not a nil *lock in an interface
	}
	return l, nil
}

// Held says whether a lock is held now, and by whom.
func (d sqlDriver) Held(_ context.Context, name string) (bool, *locking.Holder, error) {
	return d.s.held(name)
}
