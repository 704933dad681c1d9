package retention

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// Linux system calls package syscall does not wrap, by architecture
// (numbers from golang.org/x/sys/unix). An architecture missing here falls
// back to what the platform-neutral code does without them.
var (
	renameat2Numbers = map[string]uintptr{
		"amd64": 316, "386": 353, "arm": 382, "arm64": 276, "riscv64": 276,
		"loong64": 276, "ppc64": 357, "ppc64le": 357, "s390x": 347,
	}
	syncfsNumbers = map[string]uintptr{
		"amd64": 306, "386": 344, "arm": 373, "arm64": 267, "riscv64": 267,
		"loong64": 267, "ppc64": 348, "ppc64le": 348, "s390x": 338,
	}
)

// renameExchangeFlag is RENAME_EXCHANGE from <linux/fs.h>.
const renameExchangeFlag = 1 << 1

// renameExchange atomically swaps the entries a and b of dir with
// renameat2(RENAME_EXCHANGE). It returns errUnsupported where the kernel or
// the filesystem cannot.
func renameExchange(dir *os.File, a, b string) error {
	nr, ok := renameat2Numbers[runtime.GOARCH]
	if !ok {
		return errUnsupported
	}
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(nr, fd, uintptr(unsafe.Pointer(pa)), fd, uintptr(unsafe.Pointer(pb)), renameExchangeFlag, 0)
	})
	runtime.KeepAlive(pa)
	runtime.KeepAlive(pb)
	if err != nil {
		return err
	}
	switch errno {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL, syscall.ENOTSUP, syscall.EPERM:
		// EPERM: a seccomp filter that refuses unknown calls.
		return errUnsupported
	}
	return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: errno}
}

// syncFS makes everything written to f's filesystem durable with one
// syncfs(2), or returns errUnsupported.
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
