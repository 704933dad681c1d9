package files

import "syscall"

// openEntryAt opens name (a plain file name, no '/') in the directory
// dirFd for reading, never following a symlink and never blocking on a
// FIFO. dir is the directory's path, unused on Linux.
func openEntryAt(dirFd int, dir, name string) (int, error) {
	return syscall.Openat(dirFd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
