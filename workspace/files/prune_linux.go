package files

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameExchange atomically swaps the entries a and b of dir with
// renameat2(RENAME_EXCHANGE). It returns errUnsupported where the kernel or
// the filesystem cannot.
func renameExchange(dir *os.File, a, b string) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Renameat2(int(fd), a, int(fd), b, unix.RENAME_EXCHANGE)
	}); err != nil {
		return err
	}
	switch {
	case serr == nil:
		return nil
	case errors.Is(serr, unix.ENOSYS), errors.Is(serr, unix.EINVAL), errors.Is(serr, unix.ENOTSUP), errors.Is(serr, unix.EPERM):
		// EPERM: a seccomp filter that refuses unknown calls.
		return errUnsupported
	}
	return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: serr}
}

// openWhileRemoving says removeTree may keep a directory open while it is
// removed, which Linux allows.
const openWhileRemoving = true
