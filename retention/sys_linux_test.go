package retention

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS makes everything written to f's filesystem durable with one
// syncfs(2), or returns errUnsupported. The benchmark uses it so a run
// starts from a tree already on disk.
func syncFS(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	switch {
	case serr == nil:
		return nil
	case errors.Is(serr, unix.ENOSYS), errors.Is(serr, unix.EPERM):
		return errUnsupported
	}
	return &os.PathError{Op: "syncfs", Path: f.Name(), Err: serr}
}
