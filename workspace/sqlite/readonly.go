package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

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
// transaction of a store opened read-only runs on a connection opened
// for it, immutable only while the filesystem still refuses writes and
// no log holds commits (a writer creates PATH-wal before its first
// commit, and its commits reach the database file only through the log);
// otherwise (and ever after the filesystem took writes once) it is an
// ordinary connection, which reads (and writes) as usual. A process that opened the workspace on a read-only filesystem,
// the panel say, so goes on by itself once it is writable again. A
// transaction already running on an immutable connection when a writer
// checkpoints into the database file could read a page it changes: that
// needs the filesystem to turn writable and a writer to commit and
// checkpoint within that one transaction.

// openReadOnly opens the database at path for reading on a read-only
// filesystem, after the ordinary open failed with cause (an EROFS fault).
// Writes through the store fail with SQLite's read-only error, which
// faultAt gives the EROFS of the filesystem, until it is writable again.
func openReadOnly(ctx context.Context, path string, cause error) (*Store, error) {
	return openImmutable(ctx, path, cause, func() bool { return !readOnly(filepath.Dir(path)) })
}

// openImmutable is openReadOnly with writable telling whether path's
// filesystem takes writes again.
func openImmutable(ctx context.Context, path string, cause error, writable func() bool) (*Store, error) {
	if hasLog(path) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + path, Err: cause,
			Msg:  "its write-ahead log holds commits, and without " + filepath.Base(path) + "-shm SQLite cannot read them on a read-only filesystem",
			Hint: workspace.FaultHint(cause)}
	}
	drv := registered()
	conn := func(txlock string) *sql.DB {
		db := sql.OpenDB(&readOnlyConnector{drv: drv, path: path, ordinary: dsn(path, txlock, "FULL"), writable: writable})
		db.SetMaxIdleConns(0) // a connection per transaction, chosen for it
		return db
	}
	s := &Store{db: conn("immediate"), cdb: conn("immediate"), rdb: conn("deferred"), wq: newWriteQueue(path),
		own: newOwnCommits(), path: path, ro: &readOnlyOpen{cause: cause, writable: writable}}
	s.withSQL()
	s.wc, s.cc, s.rc = newStmtCache(s.db), newStmtCache(s.cdb), newStmtCache(s.rdb)
	s.db.SetMaxOpenConns(1)
	s.cdb.SetMaxOpenConns(1)
	s.rdb.SetMaxOpenConns(8)
	if err := s.rdb.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w (and read-only: %v)", path, cause, err)
	}
	return s, nil
}

// registered is the driver database/sql knows as "sqlite": the one
// whose connections have the collations registered (guard.go).
func registered() driver.Driver {
	db, _ := sql.Open("sqlite", "") // opens no connection
	defer db.Close()
	return db.Driver()
}

// hasLog reports whether path's write-ahead log holds frames.
func hasLog(path string) bool {
	wal, err := os.Stat(path + "-wal")
	return err == nil && wal.Size() > 0
}

// immutableDSN opens path read-only and immutable.
func immutableDSN(path string) string {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	q.Add("_pragma", "foreign_keys(1)")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// readOnlyConnector opens a connection to path immutable while the
// database cannot change, else as usual.
type readOnlyConnector struct {
	drv      driver.Driver
	path     string
	ordinary string      // the data source of an ordinary connection
	writable func() bool // whether path's filesystem takes writes again
	mended   atomic.Bool // writable was true once: no more probes
}

// Connect opens a connection immutable while path's filesystem refuses
// writes and its log holds no commits, else an ordinary one. Once the
// filesystem took writes again every connection is ordinary.
func (c *readOnlyConnector) Connect(context.Context) (driver.Conn, error) {
	if c.mended.Load() || hasLog(c.path) {
		return c.drv.Open(c.ordinary)
	}
	if c.writable() {
		c.mended.Store(true)
		return c.drv.Open(c.ordinary)
	}
	return c.drv.Open(immutableDSN(c.path))
}

// Driver is the connector's driver.
func (c *readOnlyConnector) Driver() driver.Driver { return c.drv }

// readOnlyOpen is how a store was opened on a read-only filesystem.
type readOnlyOpen struct {
	cause    error       // the EROFS fault of the ordinary open
	writable func() bool // whether the filesystem takes writes again
}

// readOnlyFault is the read-only fault of the store's filesystem now
// (told by trying to create a file beside the database): the fault it was
// opened read-only for, or, for a store opened as usual (as on a
// read-only filesystem when the log and its -shm exist), EROFS; nil when
// the filesystem is writable.
func (s *Store) readOnlyFault() error {
	if s.ro != nil {
		if s.ro.writable() {
			return nil
		}
		return s.ro.cause
	}
	if !readOnly(filepath.Dir(s.path)) {
		return nil
	}
	return &os.PathError{Op: "write", Path: filepath.Dir(s.path), Err: syscall.EROFS}
}
