package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// The workload on SQLite: the same env and daemon rows as on PostgreSQL,
// in a temporary database file made in the directory measured (removed
// afterwards), each beside SQLite's own floor on that disk: one INSERT …
// ON CONFLICT DO UPDATE of a 1 KiB row in its own committed transaction,
// in WAL mode with synchronous=FULL, in a database file of its own.
//
// The daemon is a `workspaced serve` process on the file; the agents are
// this binary re-executed in agent mode (AgentMain), each with a store of
// its own, inserting its markers through it. The harness learns when a
// state becomes visible by watching the database's directory (every
// commit writes <db>-wal) and reading the states: at each write heard,
// then every millisecond for 200 ms after it (a commit's log write is
// heard before the commit is visible, which a synchronous=FULL commit is
// only after its sync), and every 50 ms otherwise, stamping each state
// after its read, as on files after the read of state.json.

// SQLiteReport is what RunSQLite measured.
type SQLiteReport struct {
	// Version is SQLite's; Path the temporary database file.
	Version string   `json:"version"`
	Path    string   `json:"path"`
	Floor   Result   `json:"floor"`
	Results []Result `json:"results"`
	Notes   []string `json:"notes,omitempty"`
}

// sqliteFloorer is the floor on SQLite: one upsert of a 1 KiB row, its
// own transaction, at a time, with a value of its own each time (SQLite
// writes nothing for a row overwritten with the same bytes).
type sqliteFloorer struct {
	db   *sql.DB
	stmt *sql.Stmt
	v    string
	n    int
}

func newSQLiteFloorer(path string) (*sqliteFloorer, error) {
	db, err := sql.Open("sqlite", fileDSN(path, "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE bench_floor (k TEXT PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	stmt, err := db.Prepare("INSERT INTO bench_floor (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return &sqliteFloorer{db: db, stmt: stmt, v: strings.Repeat("x", 1024)}, nil
}

// fileDSN is the data source of the database file at path with query.
func fileDSN(path, query string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + query
}

func (f *sqliteFloorer) sample(k int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, k)
	for range k {
		f.n++
		v := fmt.Sprintf("%08d", f.n) + f.v[8:]
		t := time.Now()
		if _, err := f.stmt.Exec(fmt.Sprint(f.n%8), v); err != nil {
			return nil, fmt.Errorf("bench: the floor's upsert: %w", err)
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

func (f *sqliteFloorer) close() { f.db.Close() }

// RunSQLite runs the workload on a temporary database file in opt.Dir.
func RunSQLite(ctx context.Context, opt Options) (rep *SQLiteReport, err error) {
	defer interrupted(ctx, &err)
	base, err := os.MkdirTemp(opt.Dir, ".workspaced-bench-sqlite-")
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	defer os.RemoveAll(base)
	path := filepath.Join(base, "bench.db")
	root := sqlite.Prefix + path
	opt.say("sqlite: a temporary database %s", path)
	s, _, err := sqlite.Init(ctx, root)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep = &SQLiteReport{Path: path}
	if err := s.DB().QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&rep.Version); err != nil {
		return nil, err
	}
	fl, err := newSQLiteFloorer(filepath.Join(base, "floor.db"))
	if err != nil {
		return nil, err
	}
	defer fl.close()
	rdb, err := sql.Open("sqlite", fileDSN(path, "_pragma=busy_timeout(10000)"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer rdb.Close()
	sr := &sqRig{root: root, s: s, rdb: rdb}
	defer sr.close()
	rep.Floor, rep.Results, err = runDB(ctx, opt, "sqlite", sr, fl, "floor: INSERT … ON CONFLICT DO UPDATE of 1 KiB, own transaction, synchronous=FULL",
		[]string{"--cleanup-interval", "0"}, "target ≤ 3", "target ≥ 2")
	if err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, "sqlite: each env row's floor is sampled interleaved with it (one upsert before each operation); the daemon rows' between their rounds, the lower of that and the first floor used",
		"sqlite: a state is read at each write heard and every millisecond for 200 ms after: a daemon latency may include up to 1 ms of that")
	return rep, nil
}

// newServedSQLiteRig makes a workspace in a new database at path, watches
// its state writes and starts serveCmd on it. Closing the rig stops the
// daemon and closes the database (the caller removes the file).
func newServedSQLiteRig(ctx context.Context, path string, serveCmd []string, serveArgs ...string) (*rig, error) {
	root := sqlite.Prefix + path
	s, _, err := sqlite.Init(ctx, root)
	if err != nil {
		return nil, err
	}
	rdb, err := sql.Open("sqlite", fileDSN(path, "_pragma=busy_timeout(10000)"))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	sr := &sqRig{root: root, s: s, rdb: rdb}
	r := &rig{dir: root, st: s, cm: newCommits(), sq: sr}
	if err := sr.installClock(ctx); err != nil {
		sr.closeAll()
		return nil, err
	}
	if err := sr.watch(ctx, r.cm); err != nil {
		sr.closeAll()
		return nil, err
	}
	// Retention off, as on files.
	if r.srv, err = startServer(ctx, serveCmd, root, r.cm.abort, append([]string{"--cleanup-interval", "0"}, serveArgs...)...); err != nil {
		sr.closeAll()
		return nil, err
	}
	return r, nil
}

// closeAll stops the watch and closes the harness's pool and the store.
func (sr *sqRig) closeAll() {
	sr.close()
	sr.rdb.Close()
	sr.s.Close()
}

// sqliteClockLayout is the layout of the times the harness's trigger
// writes: SQLite's 'now', UTC, in milliseconds.
const sqliteClockLayout = "2006-01-02 15:04:05.000"

// installClock creates the harness's table bench_commits and its trigger
// on state_history, which writes into it, in the daemon's transaction,
// the time of the daemon's last write of each task's state row: the
// verdict rows' clock (verdictClock), as bench_commits is on PostgreSQL.
// SQLite's 'now' is the time in milliseconds, cut, not rounded (the unix
// VFS's gettimeofday, microseconds divided by 1,000), and taken once per
// statement: at the trigger, after the row's insert. The rig's database
// is a temporary file: the table and the trigger go with it.
func (sr *sqRig) installClock(ctx context.Context) error {
	for _, q := range []string{
		"CREATE TABLE bench_commits (task_id TEXT PRIMARY KEY, at TEXT NOT NULL)",
		`CREATE TRIGGER bench_commits AFTER INSERT ON state_history FOR EACH ROW WHEN NEW.backup = 0
		BEGIN
			INSERT INTO bench_commits VALUES (NEW.task_id, strftime('%Y-%m-%d %H:%M:%f', 'now'))
				ON CONFLICT (task_id) DO UPDATE SET at = excluded.at;
		END`,
	} {
		if _, err := sr.s.DB().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: the commits' clock: %w", err)
		}
	}
	return nil
}

// committedAt is when the daemon last wrote task's state row, to the
// millisecond (installClock).
func (sr *sqRig) committedAt(ctx context.Context, task string) (time.Time, error) {
	var at string
	if err := sr.rdb.QueryRowContext(ctx, "SELECT at FROM bench_commits WHERE task_id = $1", task).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("bench: the commit of %s: %w", task, err)
	}
	return time.ParseInLocation(sqliteClockLayout, at, time.UTC)
}

// sqRig is the SQLite side of a rig: the store of the temporary file and
// the harness's watch of its states.
type sqRig struct {
	root   string
	s      *sqlite.Store
	rdb    *sql.DB // the harness's reads: a pool of its own
	cancel context.CancelFunc
	done   chan struct{}
}

// watch reads the states at every write to the database heard, every
// millisecond for 200 ms after it and every 50 ms otherwise, and feeds
// each state whose journal_seq moved to cm, until close.
func (sr *sqRig) watch(ctx context.Context, cm *commits) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := fw.Add(filepath.Dir(strings.TrimPrefix(sr.root, sqlite.Prefix))); err != nil {
		fw.Close()
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	sr.cancel, sr.done = cancel, make(chan struct{})
	seqs := map[string]int64{}
	go func() {
		defer close(sr.done)
		defer fw.Close()
		var hot time.Time
		for {
			wait := 50 * time.Millisecond
			if time.Until(hot) > 0 {
				wait = time.Millisecond
			}
			select {
			case <-wctx.Done():
				return
			case <-fw.Events:
				hot = time.Now().Add(200 * time.Millisecond)
			case err := <-fw.Errors:
				cm.abort(fmt.Errorf("bench: watch the database: %w", err))
				return
			case <-time.After(wait):
			}
			if err := sr.readStates(wctx, cm, seqs); err != nil {
				if wctx.Err() == nil {
					cm.abort(err)
				}
				return
			}
		}
	}()
	return nil
}

// stopIdle stops the daemon (SIGSTOP) where it holds no write: stopped
// holding the write queue (mid-commit) or SQLite's write lock (which a
// read takes for an instant when it meets a log header being written),
// it would hold every agent's insert with it, and the agents' reports
// the harness waits for before it resumes the daemon. While either is
// held after the stop, the daemon is resumed for a moment and stopped
// again.
func (sr *sqRig) stopIdle(ctx context.Context, srv *server) error {
	f, err := os.OpenFile(strings.TrimPrefix(sr.root, sqlite.Prefix)+".write", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		if err := srv.pause(); err != nil {
			return err
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			free := sr.writable(ctx)
			if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil || free {
				return err
			}
		}
		if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the daemon held the write queue at every stop for a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// writable reports whether SQLite's write lock is free: a BEGIN
// IMMEDIATE that does not wait, rolled back.
func (sr *sqRig) writable(ctx context.Context) bool {
	c, err := sr.rdb.Conn(ctx)
	if err != nil {
		return false
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false
	}
	defer c.ExecContext(ctx, "PRAGMA busy_timeout = 10000")
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return false
	}
	_, err = c.ExecContext(ctx, "ROLLBACK")
	return err == nil
}

// readStates reads every state whose journal_seq is not the one seqs
// holds, and feeds it to cm.
func (sr *sqRig) readStates(ctx context.Context, cm *commits, seqs map[string]int64) error {
	if cm.quiet.Load() {
		return nil
	}
	rows, err := sr.rdb.QueryContext(ctx, "SELECT task_id, journal_seq FROM states")
	if err != nil {
		return fmt.Errorf("bench: read the states: %w", err)
	}
	var moved []string
	for rows.Next() {
		var (
			id  string
			seq int64
		)
		if err := rows.Scan(&id, &seq); err != nil {
			rows.Close()
			return err
		}
		if old, ok := seqs[id]; !ok || old != seq {
			seqs[id] = seq
			moved = append(moved, id)
		}
	}
	rows.Close()
	for _, id := range moved {
		var doc string
		if err := sr.rdb.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", id).Scan(&doc); err != nil {
			return fmt.Errorf("bench: read the state of %s: %w", id, err)
		}
		at := time.Now()
		var v taskView
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return fmt.Errorf("bench: state of %s: %w", id, err)
		}
		cm.observe(id, v, at)
	}
	return nil
}

func (sr *sqRig) close() {
	if sr.cancel != nil {
		sr.cancel()
		<-sr.done
	}
}

func (sr *sqRig) rootOf() string         { return sr.root }
func (sr *sqRig) store() workspace.Store { return sr.s }

func (sr *sqRig) exec(ctx context.Context, query string, args ...any) error {
	_, err := sr.s.DB().ExecContext(ctx, query, args...)
	return err
}

// inserted counts the task's markers every half millisecond: a round's
// inserts are known committed at the read that first counts them all.
func (sr *sqRig) inserted(ctx context.Context, task string) (func(n int) (time.Time, error), func(), error) {
	return func(n int) (time.Time, error) { return sr.countUntil(ctx, task, n) }, func() {}, nil
}

// countUntil reads the number of task's markers until it is n, and
// returns when that read was made.
func (sr *sqRig) countUntil(ctx context.Context, task string, n int) (time.Time, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		var k int
		if err := sr.rdb.QueryRowContext(ctx, "SELECT count(*) FROM markers WHERE task_id = $1", task).Scan(&k); err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		if k >= n {
			return at, nil
		}
		if at.After(deadline) {
			return time.Time{}, fmt.Errorf("bench: %d of the agents' %d inserts seen after a minute", k, n)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// commits counts the agents' markers the daemon journaled for task and
// the commits it took them in (the records of one commit share their
// taken_at).
func (sr *sqRig) commits(ctx context.Context, task string) (markers, commits int, err error) {
	err = sr.rdb.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT taken_at) FROM journal
		WHERE task_id = $1 AND substr(name, 1, 12) = '.done.agent_'`, task).Scan(&markers, &commits)
	return markers, commits, err
}

// sqDropper inserts done markers through a store of its own.
type sqDropper struct {
	s          *sqlite.Store
	task, name string
}

func newSQLiteDropper(root, task, name string) (*sqDropper, error) {
	s, err := sqlite.Open(context.Background(), root)
	if err != nil {
		return nil, err
	}
	return &sqDropper{s: s, task: task, name: name}, nil
}

func (d *sqDropper) close() { d.s.Close() }

// sqHeld is a marker ready to insert.
type sqHeld struct {
	name string
	m    workspace.Marker
}

func (d *sqDropper) prepare(sub string) (any, error) {
	now := time.Now().UTC()
	m := workspace.Marker{AgentID: d.name, SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed", CompletedAt: &now}
	return sqHeld{name: workspace.DonePrefix + d.name + "." + sub, m: m}, nil
}

func (d *sqDropper) drop(held any) error {
	h := held.(sqHeld)
	// Bounded, so that an agent left waiting for a lock (a daemon
	// stopped holding it) exits, and the harness says so, rather than
	// hanging the run.
	ctx, cancel := context.WithTimeout(context.Background(), agentDropTimeout)
	defer cancel()
	return d.s.DropNamedMarker(ctx, d.task, workspace.KindDone, h.name, h.m)
}
