package workspace

import (
	"errors"
	"syscall"
)

// Faults of the machine rather than of the request: the disk is full, the
// filesystem is read-only, the user may not touch a file, the process has
// run out of descriptors. Each is recognised by its errno however deeply
// it is wrapped (*fs.PathError, *os.LinkError, *os.SyscallError, %w, an
// Error's cause), and each has one hint saying how to fix the machine.
var faults = []struct {
	errnos []syscall.Errno
	hint   string
}{
	{[]syscall.Errno{syscall.ENOSPC, syscall.EDQUOT},
		"the filesystem is full (or the user's quota is used up): free space on it, or move the workspace to a larger one"},
	{[]syscall.Errno{syscall.EROFS},
		"the filesystem is mounted read-only: remount it read-write (mount -o remount,rw MOUNTPOINT) once it is healthy (if a disk error made it read-only, stop the processes using it, unmount it, check it with fsck and mount it again), or move the workspace to a writable one"},
	{[]syscall.Errno{syscall.EACCES, syscall.EPERM},
		"permission denied: the user running this needs read and write access to the workspace; check the owner and mode of the file and its directories (ls -l), or run as the user who owns the workspace"},
	{[]syscall.Errno{syscall.EMFILE, syscall.ENFILE},
		"too many open files: raise the open-files limit (ulimit -n, or LimitNOFILE= in a systemd unit), or run fewer processes at once"},
}

// FaultHint says how to fix the machine when err comes from a full disk
// (ENOSPC, EDQUOT), a read-only filesystem (EROFS), missing permissions
// (EACCES, EPERM) or the open-files limit (EMFILE, ENFILE), wherever in
// err's chain the errno sits; "" for any other error. The error itself
// names the file; the hint says what to do about the machine.
//
// The hint speaks of the machine, never of a flag or a tool argument, so
// every surface (the CLI, the MCP tools, the daemon's log) can show it as
// it is. It is safe for concurrent use.
func FaultHint(err error) string {
	if err == nil {
		return ""
	}
	for _, f := range faults {
		for _, n := range f.errnos {
			if errors.Is(err, n) {
				return f.hint
			}
		}
	}
	return ""
}
