//go:build !linux

package files

import (
	"path/filepath"
	"syscall"
)

// openEntryAt opens name (a plain file name, no '/') in the directory dir
// for reading, never following a final symlink and never blocking on a
// FIFO. Without openat in package syscall it goes by the directory's path.
func openEntryAt(dirFd int, dir, name string) (int, error) {
	return syscall.Open(filepath.Join(dir, name), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
