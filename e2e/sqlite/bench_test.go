package sqlite_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/clitest"
)

// TestBenchQuick runs `workspaced --root sqlite:… bench --quick --json`:
// the report holds the file workload and the same rows on SQLite beside
// its floor (an upsert of 1 KiB with synchronous=FULL), every figure
// finite, each ratio the one its note names, each daemon row's markers
// all journaled; the temporary database is gone afterwards, and the
// root's file was never made. It asserts no timing: the figures depend
// on the machine.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick workload twice, on files and on SQLite")
	}
	dir := t.TempDir()
	root := "sqlite:" + dir + "/agents.db"
	r, err := clitest.Exec(dir, clitest.CleanEnv(), "", "--root", root, "bench", "--quick", "--json", "--no-python")
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
	if len(rep.Results) == 0 || rep.Floor.P50 <= 0 {
		t.Fatalf("no file workload in the report: %+v", rep)
	}
	q := rep.SQLite
	if q == nil {
		t.Fatalf("no SQLite section:\n%s", r.Stdout)
	}
	if !strings.HasPrefix(q.Version, "3.") || !strings.HasPrefix(q.Path, dir) {
		t.Errorf("version %q, path %q (want it in %s, the root's directory)", q.Version, q.Path, dir)
	}
	if !strings.Contains(q.Floor.Name, "synchronous=FULL") || q.Floor.VsFloor != 1 || q.Floor.P50 <= 0 {
		t.Errorf("floor: %+v", q.Floor)
	}
	byName := map[string]bench.Result{}
	for _, res := range q.Results {
		for what, v := range map[string]float64{"ops/s": res.OpsPS, "p50": res.P50, "p99": res.P99, "vs_floor": res.VsFloor} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%s: %s = %v, want finite and > 0", res.Name, what, v)
			}
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
		if want := res.P50 / res.FloorP50; math.Abs(res.VsFloor-want) > 1e-9*want {
			t.Errorf("%s: vs_floor %v, want p50 ÷ its floor = %v", name, res.VsFloor, want)
		}
	}
	for _, name := range []string{"daemon 1 agent, one marker at a time: marker → state", "daemon 32 agents at once, 3 rounds",
		"daemon 32 agents × 3 markers back to back", "daemon draining 32 agents × 3 markers inserted while it was stopped"} {
		res, ok := byName[name]
		if !ok {
			t.Errorf("no row %q among %v", name, q.Results)
			continue
		}
		want := map[bool]int{true: 25, false: 96}[strings.Contains(name, "1 agent")]
		if res.Ops != want || !strings.Contains(res.Note, fmt.Sprintf("%d markers in ", want)) {
			t.Errorf("%s: %d markers, note %q; want %d journaled", name, res.Ops, res.Note, want)
		}
	}
	if _, ok := byName["32 agents inserting at once, 3 rounds, no daemon: first insert → last committed"]; !ok {
		t.Errorf("no row of the inserts alone among %v", q.Results)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Errorf("left in %s: %v", dir, left)
	}
}

// TestBenchVsDaemonItself: on a sqlite: root, --vs-daemon runs its
// paired rounds with each daemon serving a database of its own, beside
// SQLite's floor, and reports both sides.
func TestBenchVsDaemonItself(t *testing.T) {
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
