package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// FrictionDoc is the friction log's document, friction/friction.json: read
// without following a symlink or opening anything but a regular file,
// changed under its flock (friction/.locks/friction.json.lock, naming
// the writer), written atomically and durably with the workspace's mode.
func (w *Store) FrictionDoc() workspace.FrictionDoc { return frictionFile{w} }

// NoteFriction appends ev to the events.log of each of tasks that
// exists. Tasks that no longer exist (pruned, anonymised) are skipped.
func (w *Store) NoteFriction(ctx context.Context, ev workspace.Event, tasks []string) {
	for _, t := range tasks {
		if !w.IsTaskDir(t) || !w.exists(path.Join(workspace.TaskDir(t), "task.json")) {
			continue
		}
		ev.TaskID = t
		_ = w.AppendEvent(ctx, ev)
	}
}

// frictionFile is the workspace.FrictionDoc of a Store.
type frictionFile struct{ w *Store }

// Name is the log's path on disk.
func (f frictionFile) Name() string { return filepath.Join(f.w.dir, filepath.FromSlash(friction.File)) }

// Read returns the file's bytes (at most one past friction.MaxFileBytes),
// nil when there is none.
func (f frictionFile) Read(ctx context.Context) ([]byte, error) {
	// Lstat first: a symlink is not followed, and opening a FIFO would
	// block.
	fi, err := f.w.root.Lstat(friction.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file (%s)", f.Name(), friction.ErrCorrupt, fi.Mode().Type())
	}
	file, err := f.w.root.Open(friction.File)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", f.Name(), err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", f.Name(), friction.ErrCorrupt)
	}
	data, err := io.ReadAll(io.LimitReader(file, friction.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return data, nil
}

// Update changes the file under its flock.
func (f frictionFile) Update(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) (err error) {
	lockPath := filepath.Join(f.w.dir, filepath.FromSlash(locking.LockPathFor(friction.File)))
	lk, err := locking.Acquire(ctx, lockPath, locking.Options{Timeout: timeout, Agent: agent, Perm: f.w.FilePerm()})
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lk.Release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	old, err := f.Read(ctx)
	if err != nil {
		return err
	}
	data, err := change(old)
	if err != nil || data == nil {
		return err
	}
	if err := f.w.root.MkdirAll(friction.Dir, f.w.DirPerm()); err != nil {
		return fmt.Errorf("create %s: %w", friction.Dir, err)
	}
	return atomicfile.WriteFile(f.w.root, friction.File, data, f.w.FilePerm())
}
