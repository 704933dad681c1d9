package retention

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// renameat2Numbers are the numbers of renameat2(2), which package syscall
// does not wrap, by architecture (from golang.org/x/sys/unix). An
// architecture missing here falls back to what the platform-neutral code
// does without it.
var renameat2Numbers = map[string]uintptr{
	"amd64": 316, "386": 353, "arm": 382, "arm64": 276, "riscv64": 276,
	"loong64": 276, "ppc64": 357, "ppc64le": 357, "s390x": 347,
}

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

// openWhileRemoving says removeTree may keep a directory open while it is
// removed, which Linux allows.
const openWhileRemoving = true
