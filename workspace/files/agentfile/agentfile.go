// Package agentfile reads the files agents write into a workspace tree
// with the daemon's safety rules: regular files only, never following a
// final symlink, never blocking on a FIFO, within a size limit. The file
// store reads every agent-written file through it, and so do the readers
// of the tree's own files beside the store (the agents file of tokens).
package agentfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/workspaced/workspaced/workspace"
	"golang.org/x/sys/unix"
)

// Read reads a file an agent wrote, relative to root, refusing
// anything but a regular file: a symlink, FIFO, socket or device is
// ErrUnsafe, as is a file over maxBytes. It never blocks on a FIFO (the
// open uses O_NONBLOCK and O_NOFOLLOW) and never follows a final symlink.
func Read(root *os.Root, name string, maxBytes int64) ([]byte, error) {
	f, err := Open(root, name)
	if err != nil {
		return nil, err
	}
	return readOpened(f, name, maxBytes)
}

// ReadAt is Read for name, a single path component, in
// the open directory dir, for a caller that reads many files of one
// directory (the daemon taking a burst of markers). One openat(2) with
// O_NOFOLLOW does there what Read needs an open, a look-up of the
// name and a comparison for: a symlink fails to open at all, so nothing
// outside dir is ever reached.
func ReadAt(dir *os.File, name string, maxBytes int64) ([]byte, error) {
	f, err := OpenAt(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return readOpened(f, name, maxBytes)
}

// OpenDirAt opens name, a single path component, in the open directory
// dir: a directory, not a symlink to one (ErrUnsafe).
func OpenDirAt(dir *os.File, name string) (*os.File, error) {
	f, err := OpenAt(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_DIRECTORY)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "open " + name, Msg: "is not a directory"}
	}
	return f, err
}

// OpenAt opens name in dir with flags (O_CLOEXEC added), mapping a
// symlink (O_NOFOLLOW) to ErrUnsafe and a missing name to ErrNotFound.
func OpenAt(dir *os.File, name string, flags int) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "open " + name, Msg: "is not a single file name"}
	}
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(int(dir.Fd()), name, flags|unix.O_CLOEXEC, 0)
		return err
	})
	runtime.KeepAlive(dir)
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), name), nil
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK):
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a symlink; agent files must be regular files"}
	case errors.Is(err, syscall.ENOENT):
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read " + name, Err: fs.ErrNotExist}
	}
	return nil, &os.PathError{Op: "open", Path: name, Err: err}
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// readOpened reads f, a file an agent wrote, whole: a regular file within
// maxBytes, or ErrUnsafe. It closes f.
func readOpened(f *os.File, name string, maxBytes int64) ([]byte, error) {
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: fmt.Sprintf("is a %s, not a regular file", workspace.FileKind(st.Mode()))}
	}
	if st.Size() > maxBytes {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: fmt.Sprintf("is %s bytes, over the %s-byte limit", workspace.GroupDigits(int(st.Size())), workspace.GroupDigits(int(maxBytes)))}
	}
	// Sized by the stat, so that a file that did not grow is read in one
	// read(2) and its end found by a second.
	data, err := readAllSized(io.LimitReader(f, maxBytes+1), st.Size()+1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: fmt.Sprintf("grew past the %d-byte limit while being read", maxBytes)}
	}
	return data, nil
}

// Open opens name for reading without following a final symlink
// and without blocking on a FIFO. A symlink (wherever it points, inside the
// root or out of it) is ErrUnsafe, a missing file ErrNotFound.
func Open(root *os.Root, name string) (*os.File, error) {
	// An atomic rename may replace the file between the open and the check
	// below; that is a writer doing its job, not a symlink, so look again.
	const attempts = 16
	for range attempts {
		f, err := openOnce(root, name)
		if err != errReplaced {
			return f, err
		}
	}
	return nil, fmt.Errorf("open %s: replaced %d times while being opened", name, attempts)
}

// errReplaced says the name pointed at another regular file by the time it
// was checked: the open is retried.
var errReplaced = errors.New("replaced while opening")

func openOnce(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err == nil {
		// os.Root resolves a final symlink that stays inside the root
		// even with O_NOFOLLOW: check that the name itself is the file
		// opened, not a link to it.
		st, serr := f.Stat()
		lst, lerr := root.Lstat(name)
		if serr != nil || (lerr != nil && !errors.Is(lerr, fs.ErrNotExist)) {
			f.Close()
			return nil, fmt.Errorf("stat %s: %w", name, errors.Join(serr, lerr))
		}
		switch {
		case lerr != nil:
			// Removed since the open: what was opened is what the
			// name held, unless it came through a link.
			if st.Mode().IsRegular() {
				return f, nil
			}
			f.Close()
			return nil, errReplaced
		case lst.Mode()&fs.ModeSymlink != 0:
			f.Close()
			return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a symlink; agent files must be regular files"}
		case !os.SameFile(st, lst):
			f.Close()
			return nil, errReplaced
		}
		return f, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a symlink; agent files must be regular files"}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read " + name, Err: fs.ErrNotExist}
	}
	// os.Root resolves symlinks itself and reports one that leads out of
	// the root as an escape rather than ELOOP: look at what the name is.
	if st, lerr := root.Lstat(name); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a symlink; agent files must be regular files"}
	}
	if strings.Contains(err.Error(), "escapes") {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "leads outside the workspace root", Err: err}
	}
	return nil, fmt.Errorf("open %s: %w", name, err)
}

// readAllSized is io.ReadAll starting with a buffer of size bytes.
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size, 512))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
