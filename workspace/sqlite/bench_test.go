package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// The benchmarks measure the store beside SQLite's own floor on the same
// disk, sampled interleaved with each operation so that both meet the
// same load of the machine: one INSERT … ON CONFLICT DO UPDATE of a 1 KiB
// row in its own committed transaction, with the store's pragmas (WAL,
// synchronous=FULL), in a database file of its own beside the
// workspace's. Each reports its p50 in ms, the floor's p50 and their
// ratio (x-floor; for rates, markers/s ÷ one commit per marker at the
// floor's p50):
//
//	go test ./workspace/sqlite -run '^$' -bench . -benchtime 200x

// floorDB is the floor: its own database file, one connection, one
// prepared upsert of 1 KiB.
type floorDB struct {
	db   *sql.DB
	stmt *sql.Stmt
	v    string
	n    int
}

func newFloor(tb testing.TB, dir string) *floorDB {
	tb.Helper()
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, "floor.db"), "immediate", "FULL"))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE floor (k TEXT PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		tb.Fatal(err)
	}
	stmt, err := db.Prepare("INSERT INTO floor (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
	if err != nil {
		tb.Fatal(err)
	}
	return &floorDB{db: db, stmt: stmt, v: strings.Repeat("x", 1024)}
}

// sample times k upserts.
func (f *floorDB) sample(tb testing.TB, k int) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, 0, k)
	for range k {
		f.n++
		t := time.Now()
		// A value of its own each time: SQLite writes nothing for a row
		// overwritten with the same bytes, and a floor must commit.
		if _, err := f.stmt.Exec(fmt.Sprint(f.n%8), fmt.Sprintf("%08d", f.n)+f.v[8:]); err != nil {
			tb.Fatal(err)
		}
		out = append(out, time.Since(t))
	}
	return out
}

func p50ms(lat []time.Duration) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[(len(s)-1)/2]) / float64(time.Millisecond)
}

// paired times op after one floor sample each time, and reports both
// p50s and their ratio.
func paired(b *testing.B, fl *floorDB, op func(i int)) {
	b.Helper()
	var lat, floors []time.Duration
	i := 0
	for b.Loop() {
		floors = append(floors, fl.sample(b, 1)...)
		t := time.Now()
		op(i)
		lat = append(lat, time.Since(t))
		i++
	}
	b.ReportMetric(p50ms(lat), "p50-ms")
	b.ReportMetric(p50ms(floors), "floor-p50-ms")
	b.ReportMetric(p50ms(lat)/p50ms(floors), "x-floor")
}

func benchStore(b *testing.B) (*Store, *floorDB) {
	b.Helper()
	s, _ := newStore(b)
	return s, newFloor(b, filepath.Dir(s.Path()))
}

// BenchmarkEnvStore1KiB: one entry stored through the store (checked,
// its event appended, one transaction). Target: x-floor ≤ 1.5.
func BenchmarkEnvStore1KiB(b *testing.B) {
	s, fl := benchStore(b)
	ctx := b.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "bench", Description: "env benchmark"}); err != nil {
		b.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "bench"}
	value, _ := json.Marshal(strings.Repeat("x", 1022))
	paired(b, fl, func(i int) {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprintf("k%d", i%64), Description: "bench", Value: value, Agent: "bench"}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkEnvList1000x100KiB: the listing of 1,000 entries of 100 KiB,
// without their values. Target: p50 < 20 ms.
func BenchmarkEnvList1000x100KiB(b *testing.B) {
	s, fl := benchStore(b)
	ctx := b.Context()
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	value, _ := json.Marshal(strings.Repeat("y", 100<<10-2))
	for i := range 1000 {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: fmt.Sprintf("key_%04d", i), Description: "a large value", Value: value, Agent: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	paired(b, fl, func(int) {
		items, err := s.ListEntries(ctx, sc)
		if err != nil || len(items) != 1000 {
			b.Fatalf("%d items listed, want 1,000 (%v)", len(items), err)
		}
	})
}

// dbWatch wakes its waits on every write to the database's files, as a
// reader of the workspace would.
type dbWatch struct{ fw *fsnotify.Watcher }

func newDBWatch(tb testing.TB, s *Store) *dbWatch {
	tb.Helper()
	fw, err := s.watchFiles()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fw.Close() })
	return &dbWatch{fw: fw}
}

// until calls ok after every write heard (and every millisecond, for one
// missed) until it holds; it fails tb after a minute.
func (w *dbWatch) until(tb testing.TB, what string, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not after a minute", what)
		}
		select {
		case <-w.fw.Events:
		case <-time.After(time.Millisecond):
		}
	}
}

// executing makes task with n subtasks executing (its plan proposed and
// approved, taken by the daemon) and writes every subtask's output.
func executing(b *testing.B, s *Store, w *dbWatch, task string, n int) {
	b.Helper()
	ctx := b.Context()
	status := func(want func(workspace.State) bool) func() bool {
		return func() bool { st, err := s.ReadState(ctx, task); return err == nil && want(st) }
	}
	if err := fixture.PrepareTask(ctx, s, task, n); err != nil {
		b.Fatal(err)
	}
	w.until(b, "plan proposed", status(func(st workspace.State) bool { return st.PlanStatus == "proposed" }))
	if err := fixture.ApprovePlan(ctx, s, task); err != nil {
		b.Fatal(err)
	}
	w.until(b, "executing", status(func(st workspace.State) bool { return st.Status == "executing" }))
	for i := 1; i <= n; i++ {
		if _, err := s.WriteOutput(ctx, task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimVerdict: one agent's claim, served by the daemon: the
// marker's insert → the daemon's commit → the verdict read, as an agent
// waits for it (workspace.Wait, as claim --wait and MCP do). Each claim
// is on a subtask of its own, of tasks of 32 subtasks made executing as
// needed, off the clock. Target: x-floor ≤ 3.
func BenchmarkClaimVerdict(b *testing.B) {
	s, fl := benchStore(b)
	w := newDBWatch(b, s)
	servetest.Start(b, s, daemon.Config{})
	const subs = 32
	ctx := b.Context()
	var lat, floors []time.Duration
	i := 0
	for b.Loop() {
		task := fmt.Sprintf("t%d", i/subs)
		if i%subs == 0 {
			b.StopTimer()
			executing(b, s, w, task, subs)
			b.StartTimer()
		}
		floors = append(floors, fl.sample(b, 1)...)
		t := time.Now()
		name, err := s.WriteClaim(ctx, task, fmt.Sprintf("agent_%d", i), fmt.Sprintf("st_%d", i%subs+1))
		if err != nil {
			b.Fatal(err)
		}
		v, err := workspace.Wait(ctx, s, task, name, 0)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		if v.Verdict != workspace.VerdictWon {
			b.Fatalf("claim %s: %+v, want it won", name, v)
		}
		i++
	}
	b.ReportMetric(p50ms(lat), "p50-ms")
	b.ReportMetric(p50ms(floors), "floor-p50-ms")
	b.ReportMetric(p50ms(lat)/p50ms(floors), "x-floor")
}

// agentsAtOnce has n agents, each a store of its own (its own
// connections, as a process has), drop one done marker each at the same
// moment, per round, and reports markers/s ÷ one commit per marker at
// the floor's p50 (x-floor; target ≥ 2 with the daemon). With serve the
// round ends when the journal holds every marker, else when every insert
// has committed.
func agentsAtOnce(b *testing.B, n int, serve bool) {
	s, fl := benchStore(b)
	w := newDBWatch(b, s)
	if serve {
		servetest.Start(b, s, daemon.Config{})
	}
	ctx := b.Context()
	agents := make([]*Store, n)
	for i := range agents {
		a, err := Open(ctx, "sqlite:"+s.Path())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		agents[i] = a
	}
	var (
		wall    time.Duration
		markers int
		floors  []time.Duration
		commits int
	)
	round := 0
	for b.Loop() {
		b.StopTimer()
		task := fmt.Sprintf("t%d", round)
		round++
		if serve {
			executing(b, s, w, task, n)
		} else {
			outputsOnly(b, s, task, n)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, a := range agents {
			wg.Go(func() {
				<-start
				if _, err := a.WriteDone(ctx, workspace.DoneRequest{TaskID: task, Agent: fmt.Sprintf("agent_%d", i+1),
					SubtaskID: fmt.Sprintf("st_%d", i+1), OutputFile: fmt.Sprintf("outputs/st_%d.json", i+1)}); err != nil {
					b.Error(err)
				}
			})
		}
		b.StartTimer()
		t0 := time.Now()
		close(start)
		wg.Wait()
		if serve {
			w.until(b, "every marker journaled", func() bool {
				var k int
				err := s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM journal WHERE task_id = $1 AND name LIKE '.done.agent_%'", task).Scan(&k)
				return err == nil && k == n
			})
		}
		wall += time.Since(t0)
		b.StopTimer()
		markers += n
		var c int
		if err := s.rdb.QueryRowContext(ctx, "SELECT count(DISTINCT taken_at) FROM journal WHERE task_id = $1 AND name LIKE '.done.agent_%'", task).Scan(&c); err != nil {
			b.Fatal(err)
		}
		commits += c
		floors = append(floors, fl.sample(b, 32)...)
		b.StartTimer()
	}
	rate := float64(markers) / wall.Seconds()
	fp := p50ms(floors)
	b.ReportMetric(rate, "markers/s")
	b.ReportMetric(fp, "floor-p50-ms")
	b.ReportMetric(rate/(1000/fp), "x-floor")
	if serve {
		b.ReportMetric(float64(markers)/float64(max(commits, 1)), "markers/commit")
	}
}

// BenchmarkAgentsAtOnce32: 32 agents finish a subtask at the same moment
// and the daemon takes their markers. Target: x-floor ≥ 2.
func BenchmarkAgentsAtOnce32(b *testing.B) { agentsAtOnce(b, 32, true) }

// BenchmarkInsertsAlone32: the same 32 inserts with no daemon: the bound
// of BenchmarkAgentsAtOnce32, as every insert is a commit of its own.
func BenchmarkInsertsAlone32(b *testing.B) { agentsAtOnce(b, 32, false) }

// outputsOnly makes task with n subtasks' outputs and nothing else, for
// markers no daemon takes.
func outputsOnly(b *testing.B, s *Store, task string, n int) {
	b.Helper()
	ctx := b.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: task, Description: "inserts alone"}); err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := s.WriteOutput(ctx, task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
			b.Fatal(err)
		}
	}
}
