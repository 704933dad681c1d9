package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	sqlite3lib "modernc.org/sqlite/lib"
)

// SQLite reports a full disk as SQLITE_FULL and a read-only filesystem as
// SQLITE_READONLY, SQLITE_CANTOPEN or SQLITE_IOERR, with no errno in the
// error. machineErr adds the errno (ENOSPC, EROFS), so that every surface
// names the fault and its fix as it does for the file tree
// (workspace.FaultHint, workspace.FaultKind): "database or disk is full
// (13): no space left on device", with the hint to free space.

// machineErr is err with the errno of the machine's fault it comes from,
// when it comes from one; else err as it is. A read-only filesystem is
// told by trying to create a file beside the database, which only runs
// after SQLite has failed.
func (s *Store) machineErr(err error) error {
	return faultOf(s.path, err)
}

func faultOf(path string, err error) error {
	switch sqliteCode(err) & 0xff {
	case sqlite3lib.SQLITE_FULL:
		if !errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: %w", err, syscall.ENOSPC)
		}
	case sqlite3lib.SQLITE_READONLY, sqlite3lib.SQLITE_CANTOPEN, sqlite3lib.SQLITE_IOERR:
		if !errors.Is(err, syscall.EROFS) && readOnly(filepath.Dir(path)) {
			return fmt.Errorf("%w: %w", err, syscall.EROFS)
		}
	}
	return err
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
