package workspace

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"syscall"
)

// Fault kinds: a bounded name for why a task's commit failed, for metrics
// and alerts (FaultKind).
const (
	FaultDiskFull    = "disk_full"
	FaultReadOnly    = "read_only"
	FaultPermission  = "permission"
	FaultOpenFiles   = "open_files"
	FaultUnreachable = "unreachable"
	FaultOther       = "other"
)

// FaultKind names the kind of err, one of the Fault… constants: the
// machine's faults that FaultHint knows by their errno, a store out of
// reach (a network error, a deadline), else FaultOther; "" for nil. It is
// safe for concurrent use.
func FaultKind(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return FaultDiskFull
	case errors.Is(err, syscall.EROFS):
		return FaultReadOnly
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return FaultPermission
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return FaultOpenFiles
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED):
		return FaultUnreachable
	}
	return FaultOther
}

// FileKind names the type of a file that is not a regular file, in words
// fit for an error or a rejection reason: "symlink", "FIFO", "socket",
// "device", "directory", else "special file".
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}
