package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"
)

// quick runs the binary in dir with args, a --quick --json bench, and
// returns its report, strictly decoded, with the file workload in it.
func quick(t *testing.T, dir string, args ...string) bench.Report {
	t.Helper()
	r, err := clitest.Exec(dir, clitest.CleanEnv(), "", args...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 0 {
		t.Fatalf("bench: %v", r)
	}
	var rep bench.Report
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, r.Stdout)
	}
	noFiles := slices.Contains(args, "--no-files")
	if files := len(rep.Results) != 0 || rep.Floor.P50 > 0; files == noFiles {
		t.Fatalf("the file workload in the report: %v, want %v (bench %q): %+v", files, !noFiles, args, rep)
	}
	if said := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "--no-files") }); said != noFiles {
		t.Errorf("a note saying the files were left out: %v, want %v: %q", said, noFiles, rep.Notes)
	}
	return rep
}

// checkFloor fails t unless floor is a database's floor: its statement
// named (what it contains), sampled, its own ratio 1.
func checkFloor(t *testing.T, floor bench.Result, contains string) {
	t.Helper()
	if !strings.Contains(floor.Name, contains) || floor.VsFloor != 1 || floor.P50 <= 0 {
		t.Errorf("floor: %+v, want one named with %q", floor, contains)
	}
}

// TestBenchQuickOnStores runs `workspaced --root ROOT bench --quick
// --json --no-files` on a sqlite: root and on a throwaway PostgreSQL: the
// report leaves out the file workload, a note saying so (TestBenchQuickJSON
// runs it: the same on any root), and holds the same rows on the database
// beside its floor (an upsert of 1 KiB in its own transaction), every figure finite,
// each ratio the one its note names, each daemon row's markers all
// journaled; the temporary database (SQLite: and the root's file, never
// made) or schema (PostgreSQL) is gone afterwards. It asserts no timing:
// the figures depend on the machine.
func TestBenchQuickOnStores(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the quick workload twice for each store: on files and on the database")
	}
	for _, store := range []struct {
		name string
		// run runs the quick workload, checks the database's section
		// of the report but for its rows, and returns them with a
		// check of what the run left behind.
		run func(t *testing.T) (rows []bench.Result, leftNothing func())
	}{
		{"sqlite", func(t *testing.T) ([]bench.Result, func()) {
			dir := t.TempDir()
			rep := quick(t, dir, "--root", "sqlite:"+dir+"/agents.db", "bench", "--quick", "--json", "--no-files")
			q := rep.SQLite
			if q == nil {
				t.Fatalf("no SQLite section: %+v", rep)
			}
			if !strings.HasPrefix(q.Version, "3.") || !strings.HasPrefix(q.Path, dir) {
				t.Errorf("version %q, path %q (want it in %s, the root's directory)", q.Version, q.Path, dir)
			}
			checkFloor(t, q.Floor, "synchronous=FULL")
			return q.Results, func() {
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("left in %s: %v", dir, left)
				}
			}
		}},
		{"postgres", func(t *testing.T) ([]bench.Result, func()) {
			db := pgtest.DB(t)
			rep := quick(t, t.TempDir(), "--root", db, "bench", "--quick", "--json", "--no-files")
			p := rep.Postgres
			if p == nil {
				t.Fatalf("no PostgreSQL section: %+v", rep)
			}
			if !strings.HasPrefix(p.Server, "PostgreSQL ") || !strings.HasPrefix(p.Schema, "workspaced_bench_") {
				t.Errorf("server %q, schema %q", p.Server, p.Schema)
			}
			checkFloor(t, p.Floor, "ON CONFLICT DO UPDATE")
			return p.Results, func() {
				if n := benchSchemas(t, db); n != 0 {
					t.Errorf("%d temporary schemas left", n)
				}
			}
		}},
	} {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			rows, leftNothing := store.run(t)
			checkStoreRows(t, rows)
			leftNothing()
		})
	}
}

// checkStoreRows fails t unless a database's rows are all there, every
// figure finite, the env rows judged against the floor sampled with
// them, and each daemon row's markers all journaled.
func checkStoreRows(t *testing.T, rows []bench.Result) {
	t.Helper()
	byName := map[string]bench.Result{}
	for _, res := range rows {
		for what, v := range map[string]float64{"ops/s": res.OpsPS, "p50": res.P50, "p99": res.P99, "vs_floor": res.VsFloor} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%s: %s = %v, want finite and > 0", res.Name, what, v)
			}
		}
		if res.P50 > res.P99 {
			t.Errorf("%s: p50 %v > p99 %v", res.Name, res.P50, res.P99)
		}
		byName[res.Name] = res
	}
	for _, name := range []string{"env store 1 KiB", "env get 1 KiB", "env update 1 KiB", "env store 100 KiB", "env get 100 KiB",
		"env update 100 KiB", "env list 1,000 × 100 KiB, without values"} {
		res, ok := byName[name]
		if !ok {
			t.Errorf("no row %q", name)
			continue
		}
		// Judged against the floor sampled with it.
		if want := res.P50 / res.FloorP50; math.Abs(res.VsFloor-want) > 1e-9*want {
			t.Errorf("%s: vs_floor %v, want p50 ÷ its floor = %v", name, res.VsFloor, want)
		}
	}
	if res, ok := byName["env list 1,000 × 100 KiB, without values"]; ok && res.Ops < 10 {
		t.Errorf("env list: %d listings", res.Ops)
	}
	for _, name := range []string{"daemon 1 agent, one marker at a time: marker → state", "daemon 32 agents at once, 3 rounds",
		"daemon 32 agents × 3 markers back to back", "daemon draining 32 agents × 3 markers inserted while it was stopped"} {
		res, ok := byName[name]
		if !ok {
			t.Errorf("no row %q among %v", name, rows)
			continue
		}
		want := map[bool]int{true: 25, false: 96}[strings.Contains(name, "1 agent")]
		if res.Ops != want {
			t.Errorf("%s: %d markers, want %d journaled", name, res.Ops, want)
		}
		if !strings.Contains(res.Note, "floor p50") || !strings.Contains(res.Note, fmt.Sprintf("%d markers in ", want)) {
			t.Errorf("%s: note %q", name, res.Note)
		}
	}
	if _, ok := byName["32 agents inserting at once, 3 rounds, no daemon: first insert → last committed"]; !ok {
		t.Errorf("no row of the inserts alone among %v", rows)
	}
}

// benchSchemas counts the temporary schemas of bench in db.
func benchSchemas(t *testing.T, db string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'workspaced_bench_%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBenchVsDaemonPostgres: --vs-daemon on a database: the files' flags
// do not apply, and one pair of the 32-agent row runs in schemas of their
// own, dropped afterwards.
func TestBenchVsDaemonPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two daemons and their agents")
	}
	db := pgtest.DB(t)
	r := run(t, "--root", db, "bench", "--vs-daemon", clitest.Bin(), "--ext4")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--ext4 and --dir do not apply") {
		t.Errorf("--vs-daemon --ext4 on a postgres:// root: %s", r)
	}
	r = run(t, "--root", db, "bench", "--vs-daemon", clitest.Bin(), "--pairs", "1")
	if r.Code != 0 {
		t.Fatalf("bench --vs-daemon on PostgreSQL: %s", r)
	}
	for _, want := range []string{"--row 32: 1 pairs of rounds", "PostgreSQL: PostgreSQL ", "(temporary, dropped)", "B ÷ A round time", "MEDIAN ROUND MS"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("paired table on PostgreSQL lacks %q:\n%s", want, r.Stdout)
		}
	}
	if n := benchSchemas(t, db); n != 0 {
		t.Errorf("%d temporary schemas left after the paired rounds", n)
	}
}

// TestBenchVsDaemonSQLite: on a sqlite: root, --vs-daemon runs its
// paired rounds with each daemon serving a database of its own, beside
// SQLite's floor, and reports both sides.
func TestBenchVsDaemonSQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two daemons and their agents")
	}
	dir := t.TempDir()
	r, err := clitest.Exec(dir, clitest.CleanEnv(), "", "--root", "sqlite:"+dir+"/agents.db", "bench",
		"--vs-daemon", clitest.Bin(), "--row", "1", "--pairs", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 0 {
		t.Fatalf("bench --vs-daemon on a sqlite: root: %v", r)
	}
	var rep bench.PairedReport
	clitest.Decode(t, r.Stdout, &rep)
	if rep.Pairs != 2 || len(rep.Ratios) != 2 || rep.Agents != 1 || !strings.Contains(rep.Floor.Name, "INSERT … ON CONFLICT") {
		t.Fatalf("pairs %d, ratios %v, agents %d, floor %q; want 2 pairs of 1 agent beside SQLite's floor", rep.Pairs, rep.Ratios, rep.Agents, rep.Floor.Name)
	}
	for name, s := range map[string]bench.PairedSide{"A": rep.A, "B": rep.B} {
		if s.Rounds != 2 || s.Serve != clitest.Bin() || !(s.P50 > 0 && s.P50 <= s.P99 && s.VsFloor > 0) {
			t.Errorf("side %s = %+v, want 2 rounds served by %s with figures that can be", name, s, clitest.Bin())
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".workspaced-bench-*")); len(entries) != 0 {
		t.Errorf("temporary databases left behind: %v", entries)
	}
}
