package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/fixture"
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
	n := 200
	if opt.Quick {
		n = 40
	}
	opt.say("sqlite floor: upsert of 1 KiB ×%d", n)
	lat, err := fl.sample(n)
	if err != nil {
		return nil, err
	}
	rep.Floor = summarize("floor: INSERT … ON CONFLICT DO UPDATE of 1 KiB, own transaction, synchronous=FULL", lat, sum(lat))
	rep.Floor.VsFloor = 1

	opt.say("sqlite env store/get/update/list")
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "bench", Description: "env benchmark"}); err != nil {
		return nil, err
	}
	env, err := dbEnv(ctx, s, fl, n)
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, env...)

	opt.say("sqlite daemon: markers from 1 and 32 Go agent processes")
	rdb, err := sql.Open("sqlite", fileDSN(path, "_pragma=busy_timeout(10000)"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer rdb.Close()
	sr := &sqRig{root: root, s: s, rdb: rdb}
	dres, err := sr.daemon(ctx, opt, fl)
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, judgeDaemonRows(dres, rep.Floor, "one commit")...)
	rep.Notes = append(rep.Notes, "sqlite: each env row's floor is sampled interleaved with it (one upsert before each operation); the daemon rows' between their rounds, the lower of that and the first floor used",
		"sqlite: a state is read at each write heard and every millisecond for 200 ms after: a daemon latency may include up to 1 ms of that")
	return rep, nil
}

// newServedSQLiteRig makes a workspace in a new database at path, watches
// its state writes and starts serveCmd on it. Closing the rig stops the
// daemon and closes the database (the caller removes the file).
func newServedSQLiteRig(ctx context.Context, path string, serveCmd []string) (*rig, error) {
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
	r := &rig{dir: root, cm: newCommits(), sq: sr}
	if err := sr.watch(ctx, r.cm); err != nil {
		sr.closeAll()
		return nil, err
	}
	// Retention off, as on files.
	if r.srv, err = startServer(ctx, serveCmd, root, r.cm.abort, "--cleanup-interval", "0"); err != nil {
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

// prepare makes task with n subtasks st_1 … st_n executing (a plan and
// its approving review, taken by the daemon) and writes every subtask's
// output, as on files.
func (sr *sqRig) prepare(ctx context.Context, cm *commits, task string, n int) error {
	if err := fixture.PrepareTask(ctx, sr.s, task, n); err != nil {
		return err
	}
	if err := cm.waitState(task, "plan proposed", func(v taskView) bool { return v.PlanStatus == "proposed" }, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	if err := fixture.ApprovePlan(ctx, sr.s, task); err != nil {
		return err
	}
	if err := cm.waitState(task, "executing", func(v taskView) bool { return v.Status == "executing" }, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		if _, err := sr.s.WriteOutput(ctx, task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
			return err
		}
	}
	return nil
}

// daemon starts `workspaced serve` on the file and runs the daemon rows
// with Go agent processes, as on PostgreSQL. Before the daemon starts,
// the agents' inserts alone are timed (insertsAlone).
func (sr *sqRig) daemon(ctx context.Context, opt Options, fl sampler) ([]daemonRow, error) {
	single, rounds := 100, 8
	if opt.Quick {
		single, rounds = 25, 3
	}
	goKind := goAgents(opt)
	alone, err := sr.insertsAlone(ctx, goKind, 32, rounds, fl)
	if err != nil {
		return nil, err
	}
	r := &rig{dir: sr.root, cm: newCommits(), sq: sr}
	if err := sr.watch(ctx, r.cm); err != nil {
		return nil, err
	}
	defer sr.close()
	srv, err := startServer(ctx, opt.ServeCmd, sr.root, r.cm.abort, "--cleanup-interval", "0")
	if err != nil {
		return nil, err
	}
	r.srv = srv
	defer srv.close()
	return r.dbRows(ctx, goKind, single, rounds, alone, fl, sr.commits, "target ≤ 3", "target ≥ 2")
}

// insertsAlone times what no daemon can beat: n agents inserting one
// marker each at the same moment, rounds times, with no daemon running.
// The harness counts the task's markers every half millisecond (and at
// every write heard); a marker's latency runs from just before its insert
// to the read that first counted all n (what a daemon committing the
// whole round the moment the last insert commits, at no cost, would
// give), and a round's span from the first insert to that read. The
// markers are deleted after each round.
func (sr *sqRig) insertsAlone(ctx context.Context, kind agentKind, n, rounds int, fl sampler) (Result, error) {
	const task = "inserts_alone"
	s := sr.s
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: task, Description: "the agents' inserts alone"}); err != nil {
		return Result{}, err
	}
	r := &rig{dir: sr.root, cm: newCommits(), sq: sr}
	as, err := r.startAgents(kind, task, n)
	if err != nil {
		return Result{}, err
	}
	defer closeAll(as)
	var (
		lat, floors []time.Duration
		wall        time.Duration
	)
	next := 1
	for range rounds {
		for _, a := range as {
			if _, err := fmt.Fprintf(a.in, "st_%d\nsync\n", next); err != nil {
				return Result{}, err
			}
			next++
			if line, ok := <-a.lines; !ok || line != "prepared" {
				return Result{}, fmt.Errorf("bench: agent %s did not prepare (said %q)", a.name, line)
			}
		}
		for _, a := range as {
			if _, err := io.WriteString(a.in, "go\n"); err != nil {
				return Result{}, err
			}
		}
		last, err := sr.countUntil(ctx, task, n)
		if err != nil {
			return Result{}, err
		}
		var first time.Time
		var stamps []time.Time
		for _, a := range as {
			_, ts, err := a.report(1)
			if err != nil {
				return Result{}, err
			}
			stamps = append(stamps, ts...)
			if first.IsZero() || ts[0].Before(first) {
				first = ts[0]
			}
		}
		for _, t0 := range stamps {
			lat = append(lat, last.Sub(t0))
		}
		wall += last.Sub(first)
		if _, err := s.DB().ExecContext(ctx, "DELETE FROM markers WHERE task_id = $1", task); err != nil {
			return Result{}, err
		}
		fls, err := fl.sample(max(4, 32/rounds))
		if err != nil {
			return Result{}, err
		}
		floors = append(floors, fls...)
	}
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM tasks WHERE id = $1", task); err != nil {
		return Result{}, err
	}
	res := summarize(fmt.Sprintf("%d %s inserting at once, %d rounds, no daemon: first insert → last committed", n, kind.many, rounds), lat, wall)
	res.FloorP50 = floorP50(floors)
	return res, nil
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
