// Package sqlite keeps a workspace in one SQLite file: the same tasks,
// products, markers, journal, state, backups and events as the file tree
// and PostgreSQL, as rows of the same tables, so that many agent
// processes on one machine share one workspace through one file.
//
// Agents insert markers; one daemon takes them, journals them and folds
// them into the state with the state machine, one transaction per chunk
// (commit.go). The tables are the protocol: an agent in any language
// needs only SQL.
//
// # Connections
//
// Every connection runs in WAL mode (readers never wait for the writer),
// with foreign keys on and a busy timeout of DefaultBusyTimeout. Every
// write is one BEGIN IMMEDIATE transaction: it takes SQLite's single
// write lock when it begins, so two writers never deadlock upgrading a
// read, and a read-modify-write in it is never interleaved with another
// writer. Writers on the machine queue for that lock by a flock
// (queue.go). Every write is on disk when its call returns: a write
// commits with synchronous=NORMAL and syncs the log once the lock is
// given up (visible a moment before it is durable), the daemon's commits
// with synchronous=FULL (never visible before). A writer still refused
// after the busy timeout is retried until its context ends: "database is
// locked" never reaches a caller.
//
// # The single writer
//
// The daemon leads by an exclusive flock of a file beside the database,
// <db>.lock, as the file tree leads by its .workspaced.lock: every process
// that opens the file is on this machine (SQLite over a network file
// system is not safe anyway), and the kernel drops the flock when the
// daemon dies, even by SIGKILL, so a restarted daemon or a standby takes
// over at once. A lease row would need renewals and a TTL to find out
// what the kernel already knows. The epoch is 0 and the leadership is
// never lost while the process lives; SQLite's one write transaction at a
// time orders the daemon's commits with agents' writes.
//
// A Store is safe for concurrent use.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// DefaultBusyTimeout is how long one statement waits for SQLite's write
// lock before SQLITE_BUSY; the store retries after it.
const DefaultBusyTimeout = 10 * time.Second

// walSizeLimit is the size the write-ahead log is cut back to when it
// starts again after growing past it (journal_size_limit). SQLite's
// automatic checkpoint keeps the log near 4 MiB while reads are short;
// one that lasts holds the checkpoint back and the log grows meanwhile,
// and without a limit the file would keep that size.
const walSizeLimit = 16 << 20

// walCheckpointPages is how many pages the write-ahead log holds before
// a commit checkpoints it (wal_autocheckpoint; SQLite's default is 1,000).
// A checkpoint copies each page once however many of its versions the
// log holds, and a commit that rewrites a large state rewrites the same
// pages its predecessors did: at 3,072 pages (about 12 MiB, under
// walSizeLimit) a state of 500 KiB is checkpointed a third as often, its
// pages copied once for several commits.
const walCheckpointPages = 3072

// Prefix starts a root that names a SQLite database.
const Prefix = "sqlite:"

var (
	// ErrSchemaTooNew says the database was migrated by a newer
	// workspaced than this one.
	ErrSchemaTooNew = errors.New("the workspace's database is newer than this workspaced")
	// ErrNotInitialized says the file holds no workspace yet.
	ErrNotInitialized = errors.New("no workspace in this database")
)

// IsURL reports whether a root names a SQLite database: sqlite:PATH
// (sqlite:./agents.db, sqlite:///var/lib/agents.db).
func IsURL(root string) bool { return strings.HasPrefix(root, Prefix) }

// ParsePath is the database file a sqlite: root names, made absolute.
func ParsePath(root string) (string, error) {
	rest, ok := strings.CutPrefix(root, Prefix)
	if ok && strings.HasPrefix(rest, "//") {
		u, err := url.Parse(root)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			ok = false
		} else {
			rest = u.Path
		}
	}
	if !ok || rest == "" || strings.ContainsAny(rest, "?#") {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + root, Msg: "not a sqlite: root naming a file",
			Hint: "name the database as sqlite:./agents.db or sqlite:///var/lib/agents.db"}
	}
	abs, err := filepath.Abs(rest)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	}
	return abs, nil
}

// Store is a workspace in one SQLite database file.
type Store struct {
	*sqlstore.Store            // the queries the SQL stores share, over sqlDriver
	db              *sql.DB    // writes: one connection, BEGIN IMMEDIATE, the log synced after COMMIT
	cdb             *sql.DB    // the daemon's commits: one connection, synced before COMMIT returns
	rdb             *sql.DB    // reads: deferred transactions, several connections
	wc, cc          *stmtCache // db's and cdb's prepared statements
	rc              *stmtCache // rdb's
	wq              *writeQueue
	path            string
	ro              *readOnlyOpen       // set when opened on a read-only filesystem (readonly.go)
	hub             workspace.CommitHub // the watch shared by Commits (commits.go)
	bell            bell                // rung after each of the daemon's commits (bell.go)
	own             *ownCommits         // the daemon's commits under way, for its wake-ups (own.go)
}

// withSQL gives s the one SQL store over its driver.
func (s *Store) withSQL() *Store {
	s.Store = sqlstore.New(sqlDriver{s})
	return s
}

// dsn is the data source of path: every pooled connection gets the
// pragmas.
func dsn(path, txlock, synchronous string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+synchronous+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages))
	// A statement that may fail halfway (every write of a guarded table:
	// its trigger can RAISE) keeps the pages it changes in a statement
	// journal, a temporary file past 64 KiB: in memory, a large state is
	// not written to disk once more by each commit.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", txlock)
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Open opens the workspace in the database at root (sqlite:PATH) and
// checks it: it refuses a file with no workspace (ErrNotInitialized) and
// one migrated by a newer workspaced (ErrSchemaTooNew). It creates and
// migrates nothing; Init does.
func Open(ctx context.Context, root string) (*Store, error) {
	path, err := ParsePath(root)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "open " + path, Err: ErrNotInitialized,
			Hint: "create it with workspaced --root '" + root + "' init"}
	}
	s, err := connect(ctx, path)
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(ctx, s, s.Store, s.checkVersion)
}

// connect opens the two pools of path.
func connect(ctx context.Context, path string) (*Store, error) {
	// One connection each for the writes and the daemon's commits: the
	// writers queue (writeQueue) rather than in SQLite's busy loop. The
	// writes are synchronous=NORMAL and synced by write itself once the
	// lock is given up; the commits FULL, synced under the lock, so that
	// a verdict is never read before it is durable.
	db, err := sql.Open("sqlite", dsn(path, "immediate", "NORMAL"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	cdb, err := sql.Open("sqlite", dsn(path, "immediate", "FULL"))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	cdb.SetMaxOpenConns(1)
	rdb, err := sql.Open("sqlite", dsn(path, "deferred", "FULL"))
	if err != nil {
		db.Close()
		cdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(8)
	// As many kept as opened: a burst of reads does not close the ones
	// past database/sql's default two and open them again (each opening
	// reads the schema anew).
	rdb.SetMaxIdleConns(8)
	s := &Store{db: db, cdb: cdb, rdb: rdb, wc: newStmtCache(db), cc: newStmtCache(cdb), rc: newStmtCache(rdb), wq: newWriteQueue(path),
		own: newOwnCommits(), path: path}
	s.withSQL()
	// The first connection is a read's: a process that only reads (a
	// command such as task show, status) opens no write connection, each
	// opening costing a read of the whole schema. A write opens its own
	// when it comes. The ping fails as a write's would on a filesystem
	// that refuses writes: a connection's pragmas set the write-ahead
	// log, which needs PATH-shm.
	if err := rdb.PingContext(ctx); err != nil {
		s.Close()
		if err := faultAt(path, err); errors.Is(err, syscall.EROFS) {
			return openReadOnly(ctx, path, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, faultAt(path, err))
	}
	return s, nil
}

// Close closes the connections.
func (s *Store) Close() error {
	s.wc.close()
	s.cc.close()
	s.rc.close()
	return errors.Join(s.rdb.Close(), s.cdb.Close(), s.db.Close(), s.wq.close(), s.bell.close())
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// DB is the store's write pool, for tools and tests.
func (s *Store) DB() *sql.DB { return s.db }

func now() time.Time { return sqlstore.Now() }

// timeFormat is how times are kept: UTC to the millisecond, fixed width,
// so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000Z"

func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTS(s string) time.Time {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t.UTC()
}

// querier is a pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// write runs fn in one BEGIN IMMEDIATE transaction and commits it; the
// commit is durable when write returns. It is visible to other
// connections from its COMMIT, a moment before: the write-ahead log is
// synced once the write lock is given up, so that other writers go on
// meanwhile and the syncs of writers finishing together are one for the
// disk. A power loss in between loses the commit and every later one
// with it, never a part of one. A transaction SQLite refused as busy
// (another process held the write lock past the busy timeout) is run
// again, until ctx ends; fn may run more than once and must only write
// through tx.
func (s *Store) write(ctx context.Context, fn func(tx wtx) error) error {
	if err := s.retry(ctx, s.wc, fn); err != nil {
		return err
	}
	return syncWAL(s.path)
}

// writeSynced is write with the log synced before COMMIT returns and the
// write lock is given up (synchronous=FULL): nothing reads the commit
// before it is durable. The daemon commits so.
//
// Once its transaction has begun (BEGIN IMMEDIATE: the write lock taken,
// a wait ctx still ends), its statements run to their end whatever
// becomes of ctx: the driver watches a context that can end with a
// goroutine a statement (modernc.org/sqlite's interrupt), a dozen a
// commit, and a daemon that stops waits for its commits under way.
func (s *Store) writeSynced(ctx context.Context, fn func(tx wtx) error) error {
	s.own.begin()
	defer s.own.end()
	return s.retry(ctx, s.cc, func(tx wtx) error {
		tx.whole = true
		return fn(tx)
	})
}

func (s *Store) retry(ctx context.Context, c *stmtCache, fn func(tx wtx) error) error {
	for {
		err := s.tryWrite(ctx, c, fn)
		if !isBusy(err) {
			c.fill(ctx)
			return faultAt(s.path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the database stayed locked by another writer: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *Store) tryWrite(ctx context.Context, c *stmtCache, fn func(tx wtx) error) error {
	if err := s.wq.lock(ctx); err != nil {
		return err
	}
	defer s.wq.unlock()
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(wtx{Tx: tx, c: c}); err != nil {
		return err
	}
	return tx.Commit()
}

// read runs fn in one deferred (read) transaction: one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx wtx) error) error {
	for {
		err := s.tryRead(ctx, fn)
		if !isBusy(err) {
			s.rc.fill(ctx)
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *Store) tryRead(ctx context.Context, fn func(tx wtx) error) error {
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(wtx{Tx: tx, c: s.rc})
}

// query runs one read on the read pool, prepared once learned (as the
// statements of read).
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.rc.get(q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	defer s.rc.fill(ctx)
	return s.rdb.QueryContext(ctx, q, args...)
}

// exec runs one write statement on its own, retried while busy.
func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.write(ctx, func(tx wtx) error {
		var err error
		res, err = tx.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}

func sqliteCode(err error) int {
	var e *sqlite3.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err) & 0xff
	return c == sqlite3lib.SQLITE_BUSY || c == sqlite3lib.SQLITE_LOCKED
}

func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3lib.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3lib.SQLITE_CONSTRAINT_PRIMARYKEY
}

func isForeignKey(err error) bool { return sqliteCode(err) == sqlite3lib.SQLITE_CONSTRAINT_FOREIGNKEY }

// isRaised says err is a trigger's RAISE (a marker name reused).
func isRaised(err error) bool { return sqliteCode(err) == sqlite3lib.SQLITE_CONSTRAINT_TRIGGER }

// notFoundTask is sqlstore.NotFoundTask, under the name the write paths use.
func notFoundTask(id string) error { return sqlstore.NotFoundTask(id) }

// collect is sqlstore.Collect over database/sql's rows.
func collect[T any](rows *sql.Rows, err error, scan func(sqlstore.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return sqlstore.Collect(sqlRows{rows}, nil, scan)
}

// strings1 is sqlstore.Strings over database/sql's rows.
func strings1(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return sqlstore.Strings(sqlRows{rows}, nil)
}
