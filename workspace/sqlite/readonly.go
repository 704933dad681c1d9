package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	sqlite3 "modernc.org/sqlite"

	"github.com/workspaced/workspaced/workspace"
)

// A workspace on a filesystem mounted read-only (by the administrator, or
// by ext4 itself after an error with errors=remount-ro) still answers
// reads: status, the tasks, the state, the env, the events, an export.
//
// SQLite reads a WAL database on read-only media when its PATH-wal and
// PATH-shm exist (a daemon was serving, or died, when the filesystem
// turned read-only): it maps the -shm read-only, or rebuilds the index
// of the log in memory when no process holds it, and reads the commits
// still in the log. The ordinary open does that by itself. When the
// database was closed cleanly the log and its index are gone, and SQLite
// cannot create them there: the open fails. The database file then holds
// every commit, and opening it immutable (SQLite's immutable=1: no
// locks, no log) reads it whole. That is the one case openReadOnly
// serves; when a log with commits is left without its -shm the commits
// in it cannot be read on a read-only filesystem, and the open fails
// saying so rather than read the database without them.
//
// Immutable means SQLite trusts the file never to change. It cannot
// while the filesystem is read-only; once it is writable again a writer
// may start, and an immutable read would miss its commits. So every
// transaction of a read-only store runs on a connection opened for it,
// and a connection is opened only while the filesystem still refuses
// writes and no log has appeared (a writer creates PATH-wal before its
// first commit and its commits reach the database file only through the
// log); otherwise the read fails with ErrWritableAgain, and opening the
// workspace again reads it as usual.

// ErrWritableAgain says a workspace opened while its filesystem was
// read-only is writable again, or has a writer: open it again.
var ErrWritableAgain = errors.New("the workspace was opened read-only while its filesystem was, and it is writable again")

// openReadOnly opens the database at path immutable, for reading on a
// read-only filesystem, after the ordinary open failed with cause (an
// EROFS fault). Writes through the store fail with SQLite's read-only
// error, which faultAt gives the EROFS of the filesystem.
func openReadOnly(ctx context.Context, path string, cause error) (*Store, error) {
	return openImmutable(ctx, path, cause, func() bool { return !readOnly(filepath.Dir(path)) })
}

// openImmutable is openReadOnly with writable telling whether path's
// filesystem takes writes again.
func openImmutable(ctx context.Context, path string, cause error, writable func() bool) (*Store, error) {
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + path, Err: cause,
			Msg:  "its write-ahead log holds commits, and without " + filepath.Base(path) + "-shm SQLite cannot read them on a read-only filesystem",
			Hint: workspace.FaultHint(cause)}
	}
	c := &readOnlyConnector{drv: &sqlite3.Driver{}, dsn: immutableDSN(path), path: path, writable: writable}
	s := &Store{db: readOnlyPool(c), rdb: readOnlyPool(c), path: path, settings: workspace.Settings{}.WithDefaults(), readOnly: cause}
	if err := s.rdb.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w (and read-only: %v)", path, cause, err)
	}
	return s, nil
}

// readOnlyPool is a pool of c whose connections serve one use each: every
// transaction gets a connection opened (and checked) for it.
func readOnlyPool(c *readOnlyConnector) *sql.DB {
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(0)
	return db
}

// immutableDSN opens path read-only and immutable.
func immutableDSN(path string) string {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	q.Add("_pragma", "foreign_keys(1)")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// readOnlyConnector opens immutable connections to path while the
// database cannot change.
type readOnlyConnector struct {
	drv      *sqlite3.Driver
	dsn      string
	path     string
	writable func() bool // whether path's filesystem takes writes again
}

// Connect opens a connection when the database still cannot change:
// its filesystem refuses writes and it has no log with commits.
func (c *readOnlyConnector) Connect(context.Context) (driver.Conn, error) {
	wal, err := os.Stat(c.path + "-wal")
	if (err == nil && wal.Size() > 0) || c.writable() {
		return nil, &workspace.Error{Kind: workspace.ErrConflict, Op: "read " + c.path, Err: ErrWritableAgain,
			Hint: "run the command again (or restart the process that opened it): it opens the database as usual now"}
	}
	return c.drv.Open(c.dsn)
}

// Driver is the connector's driver.
func (c *readOnlyConnector) Driver() driver.Driver { return c.drv }

// ReadOnly is the fault the store was opened read-only for (an EROFS
// error), or nil for a store opened as usual.
func (s *Store) ReadOnly() error { return s.readOnly }

// readOnlyFault is the read-only fault of the store's filesystem now: the
// fault it was opened read-only for, or, for a store opened as usual (on
// a read-only filesystem too when its log and -shm exist), EROFS when
// its directory refuses a new file; nil when it is writable.
func (s *Store) readOnlyFault() error {
	if s.readOnly != nil {
		return s.readOnly
	}
	if !readOnly(filepath.Dir(s.path)) {
		return nil
	}
	return &os.PathError{Op: "write", Path: filepath.Dir(s.path), Err: syscall.EROFS}
}
