package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// LockFile takes the exclusive lock that guards the file name (relative to
// the root): <dir>/.locks/<base>.lock. It waits up to the workspace's lock
// timeout; a timeout is ErrLocked carrying the holder.
func (w *Store) LockFile(ctx context.Context, name, agent string) (*locking.Lock, error) {
	return w.lockPath(ctx, locking.LockPathFor(name), agent)
}

// LockTask takes a whole task's lock, tasks/<id>/.locks/task.lock: the
// daemon applying markers and cleanup pruning the task hold it. The task
// directory must exist (ErrNotFound otherwise): taking the lock of a task
// removed meanwhile never makes its directory again.
func (w *Store) LockTask(ctx context.Context, taskID, agent string) (*locking.Lock, error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, err
	}
	td, err := w.root.OpenRoot(workspace.TaskDir(taskID))
	if isNotExist(err) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "lock task " + taskID, Msg: "no such task", Field: workspace.FieldTask}
	}
	if err != nil {
		return nil, fmt.Errorf("lock task %s: %w", taskID, err)
	}
	defer td.Close()
	return w.lockIn(ctx, td, workspace.TaskDir(taskID), "task", agent)
}

// LockNamed takes a named lock of a task, tasks/<id>/.locks/<name>.lock,
// for `workspaced lock`: agents coordinate anything they like with it.
func (w *Store) LockNamed(ctx context.Context, taskID, name, agent string) (*locking.Lock, error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, err
	}
	if err := workspace.ValidateID("lock name", name); err != nil {
		return nil, err
	}
	return w.lockPath(ctx, path.Join("tasks", taskID, ".locks", name+".lock"), agent)
}

func (w *Store) lockPath(ctx context.Context, rel, agent string) (*locking.Lock, error) {
	// Create .locks through the root, so a symlinked directory cannot lead
	// the lock file outside it.
	if err := atomicfile.MkdirAll(w.root, filepath.FromSlash(path.Dir(rel)), w.DirPerm()); err != nil {
		return nil, fmt.Errorf("create lock directory %s: %w", path.Dir(rel), err)
	}
	return w.acquire(ctx, w.root, filepath.FromSlash(rel), rel, agent)
}

// lockTaskIn takes task id's lock through td, its directory open (the
// daemon's commit): .locks is opened in td (made when missing), and the
// lock file in it by locking.AcquireAt, with no path walked from the root.
// The checks are LockTask's.
func (w *Store) lockTaskIn(ctx context.Context, td *os.Root, id, agent string) (*locking.Lock, error) {
	rel := path.Join(workspace.TaskDir(id), ".locks", "task.lock")
	open := func() (*os.File, error) { return td.OpenFile(".locks", os.O_RDONLY|syscall.O_NONBLOCK, 0) }
	ld, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		if err := td.Mkdir(".locks", w.DirPerm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create lock directory %s/.locks: %w", workspace.TaskDir(id), err)
		}
		ld, err = open()
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", rel, err)
	}
	defer ld.Close()
	var st unix.Stat_t
	switch err := unix.Fstatat(int(ld.Fd()), "task.lock", &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "lock " + rel, Msg: fmt.Sprintf("lock file is a %s, not a regular file", lockKind(uint32(st.Mode))),
			Hint: "remove it; lock files are plain files the workspace creates"}
	case err != nil && !errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("lock %s: %w", rel, err)
	}
	l, err := locking.AcquireAt(ctx, ld, "task.lock", filepath.Join(w.dir, filepath.FromSlash(rel)), w.lockOptions(agent))
	return l, w.lockError(rel, err)
}

// lockIn takes the lock of the file base in the directory d (dirRel
// relative to the root): dirRel/.locks/base.lock.
func (w *Store) lockIn(ctx context.Context, d *os.Root, dirRel, base, agent string) (*locking.Lock, error) {
	// Looked at before it is made: mkdir(2) of a name that exists still
	// takes the directory's lock, behind the agents' renames.
	if fi, err := d.Lstat(".locks"); err != nil || !fi.IsDir() {
		if err := d.Mkdir(".locks", w.DirPerm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create lock directory %s/.locks: %w", dirRel, err)
		}
	}
	return w.acquire(ctx, d, filepath.Join(".locks", base+".lock"), path.Join(dirRel, ".locks", base+".lock"), agent)
}

// acquire takes the lock file at name inside r, rel being its path from
// the workspace root.
func (w *Store) acquire(ctx context.Context, r *os.Root, name, rel, agent string) (*locking.Lock, error) {
	// The lock is taken by absolute path, which would follow a symlink
	// planted in the lock file's place: refuse anything but a regular file.
	if st, err := r.Lstat(name); err == nil && !st.Mode().IsRegular() {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "lock " + rel, Msg: fmt.Sprintf("lock file is a %s, not a regular file", workspace.FileKind(st.Mode())),
			Hint: "remove it; lock files are plain files the workspace creates"}
	} else if err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("lock %s: %w", rel, err)
	}
	// The directory was made through the root above: should it be gone
	// by now, the lock fails rather than making it again.
	l, err := locking.Acquire(ctx, filepath.Join(w.dir, filepath.FromSlash(rel)), w.lockOptions(agent))
	return l, w.lockError(rel, err)
}

// lockKind names what a lock file's stat(2) mode says it is.
func lockKind(m uint32) string {
	if m&unix.S_IFMT == unix.S_IFDIR {
		return workspace.FileKind(fs.ModeDir)
	}
	return workspace.FileKind(modeOf(m))
}

// lockOptions are the options of every lock the store takes for agent.
func (w *Store) lockOptions(agent string) locking.Options {
	return locking.Options{
		Timeout:   timeDuration(w.settings.LockTimeout),
		Agent:     agent,
		Perm:      w.FilePerm(),
		NoParents: true,
	}
}

// lockError says why the lock rel was not taken: ErrLocked with a hint
// when another holds it. It is nil for a nil err.
func (w *Store) lockError(rel string, err error) error {
	if errors.Is(err, locking.ErrLocked) {
		return &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + rel, Err: err,
			Hint: "another process holds it; retry later, or raise lock_timeout in workspace.json"}
	}
	return err
}
