package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/workspaced/workspaced/atomicfile"
)

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
