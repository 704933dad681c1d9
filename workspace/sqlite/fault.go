package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	sqlite3lib "modernc.org/sqlite/lib"
)

// SQLite reports a machine's faults by its own result codes, not by
// errno: a full disk is SQLITE_FULL, a read-only file or filesystem
// SQLITE_READONLY (or, when the database cannot even be opened there,
// SQLITE_CANTOPEN or SQLITE_IOERR), a file the user may not open
// SQLITE_PERM or SQLITE_CANTOPEN. fault gives such an error the errno the
// rest of the workspace knows them by (workspace.FaultHint,
// workspace.FaultKind), so agents' errors, the daemon's report, status
// and the metrics name the fault and its fix as they do for the file
// tree: "database or disk is full (13): no space left on device", with
// the hint to free space.

// faultErr is a SQLite error with the errno of the machine's fault.
type faultErr struct {
	err   error
	errno syscall.Errno
}

func (e *faultErr) Error() string   { return e.err.Error() + ": " + e.errno.Error() }
func (e *faultErr) Unwrap() []error { return []error{e.err, e.errno} }

// fault is err with the errno of the machine's fault it reports, if any;
// any other error (and nil) as it is.
func fault(err error) error { return faultAt("", err) }

// faultAt is fault for an error of the database at path: an error that
// may come from a read-only filesystem (SQLITE_READONLY, SQLITE_CANTOPEN,
// SQLITE_IOERR) is EROFS when the filesystem of path's directory is
// mounted read-only, which is told by trying to create a file there (only
// after SQLite has failed).
func faultAt(path string, err error) error {
	var fe *faultErr
	if errors.As(err, &fe) {
		return err
	}
	var errno syscall.Errno
	switch code := sqliteCode(err) & 0xff; {
	case code == sqlite3lib.SQLITE_FULL:
		errno = syscall.ENOSPC
	case (code == sqlite3lib.SQLITE_READONLY || code == sqlite3lib.SQLITE_CANTOPEN || code == sqlite3lib.SQLITE_IOERR) &&
		path != "" && readOnly(filepath.Dir(path)):
		errno = syscall.EROFS
	case code == sqlite3lib.SQLITE_READONLY:
		errno = syscall.EROFS
	case code == sqlite3lib.SQLITE_PERM, code == sqlite3lib.SQLITE_CANTOPEN:
		errno = syscall.EACCES
	default:
		return err
	}
	return &faultErr{err: err, errno: errno}
}

// readOnly reports whether dir is on a filesystem mounted read-only.
func readOnly(dir string) bool {
	f, err := os.CreateTemp(dir, ".workspaced-probe-*")
	if err != nil {
		return errors.Is(err, syscall.EROFS)
	}
	f.Close()
	os.Remove(f.Name())
	return false
}
