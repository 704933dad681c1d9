package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"
)

// TestBenchPostgresQuick runs `workspaced --root postgres://… bench
// --quick --json` on a throwaway PostgreSQL: the report holds the file
// workload and the same rows on PostgreSQL beside its floor, every figure
// finite, each ratio the one its note names; the temporary schema is gone
// afterwards. It asserts no timing: the figures depend on the machine.
func TestBenchPostgresQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick workload twice, on files and on PostgreSQL")
	}
	db := pgtest.DB(t)
	r := run(t, "--root", db, "bench", "--quick", "--json", "--no-python", "--dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("bench: %s", r)
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
	p := rep.Postgres
	if p == nil {
		t.Fatalf("no PostgreSQL section:\n%s", r.Stdout)
	}
	if !strings.HasPrefix(p.Server, "PostgreSQL ") || !strings.HasPrefix(p.Schema, "workspaced_bench_") {
		t.Errorf("server %q, schema %q", p.Server, p.Schema)
	}
	if !strings.Contains(p.Floor.Name, "ON CONFLICT DO UPDATE") || p.Floor.VsFloor != 1 || p.Floor.P50 <= 0 {
		t.Errorf("floor: %+v", p.Floor)
	}
	byName := map[string]bench.Result{}
	for _, res := range p.Results {
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
	for _, name := range []string{"daemon 1 agent, one marker at a time: marker → state", "daemon 32 agents at once, 3 rounds", "daemon 32 agents × 3 markers back to back",
		"daemon draining 32 agents × 3 markers inserted while it was stopped"} {
		res, ok := byName[name]
		if !ok {
			t.Errorf("no row %q among %v", name, p.Results)
			continue
		}
		want := map[bool]int{true: 25, false: 96}[strings.Contains(name, "1 agent")]
		if res.Ops != want {
			t.Errorf("%s: %d markers, want %d", name, res.Ops, want)
		}
		if !strings.Contains(res.Note, "floor p50") || !strings.Contains(res.Note, fmt.Sprintf("%d markers in ", want)) {
			t.Errorf("%s: note %q", name, res.Note)
		}
	}
	// The temporary schema was dropped.
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'workspaced_bench_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d temporary schemas left (%v)", n, err)
	}

	// --vs-daemon on a database: the files' flags do not apply, and one
	// pair of the 32-agent row runs in schemas of their own, dropped
	// afterwards.
	r = run(t, "--root", db, "bench", "--vs-daemon", clitest.Bin(), "--ext4")
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
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'workspaced_bench_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d temporary schemas left after the paired rounds (%v)", n, err)
	}
}
