package retention

import (
	"os"
	"runtime"
	"syscall"
)

// syncfsNumbers are the syncfs(2) numbers by architecture (from
// golang.org/x/sys/unix).
var syncfsNumbers = map[string]uintptr{
	"amd64": 306, "386": 344, "arm": 373, "arm64": 267, "riscv64": 267,
	"loong64": 267, "ppc64": 348, "ppc64le": 348, "s390x": 338,
}

// syncFS makes everything written to f's filesystem durable with one
// syncfs(2), or returns errUnsupported. The benchmark uses it so a run
// starts from a tree already on disk.
func syncFS(f *os.File) error {
	nr, ok := syncfsNumbers[runtime.GOARCH]
	if !ok {
		return errUnsupported
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(nr, fd, 0, 0)
	}); err != nil {
		return err
	}
	switch errno {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EPERM:
		return errUnsupported
	}
	return &os.PathError{Op: "syncfs", Path: f.Name(), Err: errno}
}
