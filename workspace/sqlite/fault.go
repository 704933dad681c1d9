package sqlite

import (
	"syscall"

	sqlite3lib "modernc.org/sqlite/lib"
)

// SQLite reports a machine's faults by its own result codes, not by
// errno: a full disk is SQLITE_FULL, a read-only file or filesystem
// SQLITE_READONLY, a file the user may not open SQLITE_PERM or
// SQLITE_CANTOPEN. fault gives such an error the errno the rest of the
// workspace knows them by (workspace.FaultHint, workspace.FaultKind), so
// the daemon's report, status and the metrics name the fault and its fix
// as they do for the file tree.

// faultErr is a SQLite error with the errno of the machine's fault.
type faultErr struct {
	err   error
	errno syscall.Errno
}

func (e *faultErr) Error() string   { return e.err.Error() }
func (e *faultErr) Unwrap() []error { return []error{e.err, e.errno} }

// fault is err with the errno of the machine's fault it reports, if any;
// any other error (and nil) as it is.
func fault(err error) error {
	var errno syscall.Errno
	switch sqliteCode(err) & 0xff {
	case sqlite3lib.SQLITE_FULL:
		errno = syscall.ENOSPC
	case sqlite3lib.SQLITE_READONLY:
		errno = syscall.EROFS
	case sqlite3lib.SQLITE_PERM, sqlite3lib.SQLITE_CANTOPEN:
		errno = syscall.EACCES
	default:
		return err
	}
	return &faultErr{err: err, errno: errno}
}
