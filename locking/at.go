//go:build unix

package locking

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// AcquireAt is Acquire of the lock file name in dir, an open directory
// that must exist: name is one path component, never followed if it is a
// symlink (O_NOFOLLOW), and the lock and its holder record are reached by
// descriptors opened relative to dir, with no path walked and no
// descriptor handed to the runtime's poller. path names the lock file
// (its full path) in errors and is read for the holder on a timeout. The
// lock is the same flock(2) lock Acquire and any other program take on
// that file, and its descriptor is read-only, as Acquire's.
func AcquireAt(ctx context.Context, dir *os.File, name, path string, opt Options) (*Lock, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("acquire lock %s: %q is not a single file name", path, name)
	}
	// O_NONBLOCK: a FIFO in its place does not block the open; it is
	// refused below with anything else that is not a regular file.
	fd, err := openAt(dir, name, unix.O_RDONLY|unix.O_CREAT|unix.O_NONBLOCK, opt.perm())
	if err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", path, err)
	}
	fl := &fdLock{fd: fd}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		fl.close()
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, fmt.Errorf("acquire lock %s: %w", path, err)
	}
	write := func(data []byte) error { return writeRecordAt(dir, name, data) }
	l, err := acquire(ctx, path, fl, write, opt)
	if err != nil {
		fl.close()
		return nil, err
	}
	return l, nil
}

// fdLock is a flock(2) lock on a descriptor of its own, closed by Unlock.
type fdLock struct{ fd int }

// close closes the descriptor if Unlock has not.
func (l *fdLock) close() {
	if l.fd >= 0 {
		_ = unix.Close(l.fd)
		l.fd = -1
	}
}

func (l *fdLock) TryLock() (bool, error) {
	for {
		err := unix.Flock(l.fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, unix.EINTR):
			return false, err
		}
	}
}

func (l *fdLock) Unlock() error {
	if l.fd < 0 {
		return nil
	}
	err := unix.Flock(l.fd, unix.LOCK_UN)
	if cerr := unix.Close(l.fd); err == nil {
		err = cerr
	}
	l.fd = -1
	return err
}

// openAt opens name in dir with flags, never following a symlink.
func openAt(dir *os.File, name string, flags int, perm os.FileMode) (int, error) {
	defer runtime.KeepAlive(dir)
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: name, Err: err}
			}
			return fd, nil
		}
	}
}

// writeRecordAt is writeRecord of name in dir.
func writeRecordAt(dir *os.File, name string, data []byte) error {
	fd, err := openAt(dir, name, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	// On the descriptor itself, as overwrite does on a file: an *os.File
	// would cost a fcntl(2) and a failed epoll_ctl(2) at every lock.
	err = pwriteAll(fd, data)
	if err == nil {
		err = ignoringEINTR(func() error { return unix.Ftruncate(fd, int64(len(data))) })
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}

// pwriteAll writes data at offset 0 of fd, whole.
func pwriteAll(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n == 0:
			return io.ErrShortWrite
		}
		off += n
	}
	return nil
}

// ignoringEINTR calls fn again while it fails with EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
