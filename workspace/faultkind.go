package workspace

import (
	"context"
	"errors"
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
