package bench

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/testbin"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd count, unsorted", []float64{5, 1, 3}, 3},
		{"even count: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.values); got != tt.want {
				t.Errorf("median = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedianCI(t *testing.T) {
	t.Parallel()
	forty := make([]float64, 40)
	for i := range forty {
		forty[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		lo, hi float64
	}{
		{"none", nil, 0, 0},
		{"few: the whole range", []float64{1, 2, 3, 4, 5}, 1, 5},
		{"forty: the 13th and the 28th", forty, 13, 28},
		{"sixteen: the 4th and the 13th", forty[:16], 4, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := medianCI(tt.sorted)
			if lo != tt.lo || hi != tt.hi {
				t.Errorf("medianCI = %v…%v, want %v…%v", lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

// rnd is a round of RowAtOnce of the given span (ms), its figure, with
// one marker per latency (ms).
func rnd(span int, lat ...int) round {
	return round{span: time.Duration(span) * time.Millisecond, lat: durs(lat...), figure: float64(span)}
}

// TestPairedCompare: per pair B's round time over A's, their median, min
// and max, the pairs A won (a tie is no win), and per side the median
// round, markers/s over the summed rounds against the floor, p50 and p99.
func TestPairedCompare(t *testing.T) {
	t.Parallel()
	a := []round{rnd(10, 5, 10), rnd(20, 5, 20), rnd(10, 2, 10), rnd(40, 30, 40)}
	b := []round{rnd(20, 5, 20), rnd(20, 5, 20), rnd(5, 1, 5), rnd(60, 30, 60)}
	rep := &PairedReport{Floor: Result{P50: 4}} // 250 durable writes/s
	rep.compare("a-bin", "b-bin", a, b)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if rep.Pairs != 4 || len(rep.Ratios) != 4 {
		t.Fatalf("pairs %d, ratios %v; want 4 of each", rep.Pairs, rep.Ratios)
	}
	for i, want := range []float64{2, 1, 0.5, 1.5} {
		near("ratio", rep.Ratios[i], want)
	}
	near("ratio median", rep.RatioMedian, 1.25)
	near("ratio min", rep.RatioMin, 0.5)
	near("ratio max", rep.RatioMax, 2)
	near("ratio CI low", rep.RatioLow, 0.5) // four pairs: the whole range
	near("ratio CI high", rep.RatioHigh, 2)
	if rep.AFaster != 2 {
		t.Errorf("A faster in %d pairs, want 2 (a tie is no win)", rep.AFaster)
	}
	if rep.A.Serve != "a-bin" || rep.B.Serve != "b-bin" || rep.A.Rounds != 4 || rep.A.Markers != 8 {
		t.Errorf("side A = %+v", rep.A)
	}
	near("A median round", rep.A.MedianRoundMS, 15)
	near("B median round", rep.B.MedianRoundMS, 20)
	near("A markers/s", rep.A.MarkersPS, 8/0.080)
	near("A vs floor", rep.A.VsFloor, 8/0.080/250)
	near("B markers/s", rep.B.MarkersPS, 8/0.105)
	near("A p50", rep.A.P50, 10)
	near("A p99", rep.A.P99, 40)
	// The ratios are kept in pair order, not sorted by the median.
	near("first ratio after the summary", rep.Ratios[0], 2)

	// Uneven sides: only whole pairs count.
	rep = &PairedReport{Floor: Result{P50: 4}}
	rep.compare("a", "b", a, b[:3])
	if rep.Pairs != 3 || len(rep.Ratios) != 3 {
		t.Errorf("uneven: %d pairs, %d ratios; want 3", rep.Pairs, len(rep.Ratios))
	}
}

// TestPairedCompareSingle: on RowSingle a round's figure is its markers'
// median latency, not its span; the ratios are of those figures, the
// sides' median is of them too, and vs floor is p50 ÷ the floor's p50.
func TestPairedCompareSingle(t *testing.T) {
	t.Parallel()
	single := func(wait int, figure float64, lat ...int) round {
		return round{span: time.Duration(wait) * time.Millisecond, lat: durs(lat...), figure: figure}
	}
	a := []round{single(100, 4, 3, 4, 5), single(100, 6, 6, 6, 6)}
	b := []round{single(50, 8, 8, 8, 8), single(50, 3, 2, 3, 4)}
	rep := &PairedReport{Row: RowSingle, Floor: Result{P50: 2}}
	rep.compare("a", "b", a, b)
	if rep.Pairs != 2 || len(rep.Ratios) != 2 || rep.Ratios[0] != 2 || rep.Ratios[1] != 0.5 {
		t.Fatalf("pairs %d, ratios %v; want 2 pairs, B ÷ A figures 2 and 0.5", rep.Pairs, rep.Ratios)
	}
	if rep.AFaster != 1 || rep.RatioMedian != 1.25 {
		t.Errorf("A faster %d, median ratio %v; want 1 and 1.25", rep.AFaster, rep.RatioMedian)
	}
	if rep.A.MedianRoundMS != 5 || rep.A.Markers != 6 || rep.A.P50 != 5 || rep.A.VsFloor != 2.5 {
		t.Errorf("side A = %+v; want median figure 5, 6 markers, p50 5, vs floor 5 ÷ 2", rep.A)
	}
	if math.Abs(rep.A.MarkersPS-30) > 1e-9 {
		t.Errorf("A markers/s %v, want 6 over the 200 ms of waits", rep.A.MarkersPS)
	}
}

// pairedItself runs pairs of rounds of row with the workspaced binary's
// daemon as both A and B, on files in a temporary directory or in the
// database of pg.
func pairedItself(t *testing.T, row, pairs int, pg string) (*PairedReport, string, string) {
	t.Helper()
	bin, dir := testbin.Must(t), t.TempDir()
	rep, err := RunPaired(context.Background(), PairedOptions{Dir: dir, Postgres: pg, Row: row, Pairs: pairs,
		AgentCmd: []string{bin, "bench", "agent"}, ServeA: []string{bin, "--root"}, ServeB: []string{bin, "--root"}})
	if err != nil {
		t.Fatalf("RunPaired: %v", err)
	}
	return rep, bin, dir
}

// checkPairedShape checks a report of pairs pairs of RowSingle served by
// bin on both sides: every pair counted, every ratio finite and positive
// and in order with its summary, both sides' figures there, and the
// floor sampled once after every marker. It asserts no timing.
func checkPairedShape(t *testing.T, rep *PairedReport, pairs int, bin string) {
	t.Helper()
	if rep.Row != RowSingle || rep.Agents != 1 || rep.PerRound != pairedSingleMarkers || rep.Pairs != pairs || len(rep.Ratios) != pairs {
		t.Fatalf("row %d, %d agents, %d a round, %d pairs, ratios %v; want row 1, 1 agent, %d a round, %d pairs",
			rep.Row, rep.Agents, rep.PerRound, rep.Pairs, rep.Ratios, pairedSingleMarkers, pairs)
	}
	for _, r := range rep.Ratios {
		if math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
			t.Errorf("ratio %v: not finite and positive", r)
		}
	}
	for name, s := range map[string]PairedSide{"A": rep.A, "B": rep.B} {
		if s.Rounds != pairs || s.Markers != pairs*pairedSingleMarkers || s.Serve != bin {
			t.Errorf("side %s = %+v, want %d rounds, %d markers, served by %s", name, s, pairs, pairs*pairedSingleMarkers, bin)
		}
		for what, v := range map[string]float64{"median latency": s.MedianRoundMS, "markers/s": s.MarkersPS, "vs floor": s.VsFloor, "p50": s.P50, "p99": s.P99} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("side %s: %s = %v, want finite and > 0", name, what, v)
			}
		}
		if s.P50 > s.P99 {
			t.Errorf("side %s: p50 %v > p99 %v", name, s.P50, s.P99)
		}
	}
	if !(rep.RatioMin <= rep.RatioLow && rep.RatioLow <= rep.RatioMedian && rep.RatioMedian <= rep.RatioHigh && rep.RatioHigh <= rep.RatioMax) {
		t.Errorf("ratios min %v, CI low %v, median %v, CI high %v, max %v: out of order",
			rep.RatioMin, rep.RatioLow, rep.RatioMedian, rep.RatioHigh, rep.RatioMax)
	}
	if rep.AFaster < 0 || rep.AFaster > pairs || rep.Floor.Ops != 2*pairs*pairedSingleMarkers || rep.Floor.P50 <= 0 {
		t.Errorf("A faster in %d pairs, floor %+v", rep.AFaster, rep.Floor)
	}
}

// TestRunPairedSingleFiles compares the daemon of the workspaced binary
// with itself on row 1, on files, for two pairs: the report has its
// shape, names the filesystem, and the temporary workspaces are gone.
func TestRunPairedSingleFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs two daemons")
	}
	rep, bin, dir := pairedItself(t, RowSingle, 2, "")
	checkPairedShape(t, rep, 2, bin)
	if rep.FS.Type == "" || rep.Server != "" || len(rep.Schemas) != 0 {
		t.Errorf("filesystem %+v, server %q, schemas %v: want a filesystem and no database", rep.FS, rep.Server, rep.Schemas)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in %s", len(left), dir)
	}
}

// TestRunPairedSinglePostgres compares the daemon of the workspaced
// binary with itself on row 1, on PostgreSQL, for two pairs: both
// daemons lead at once, each in a temporary schema of its own; the
// report has its shape and names the server and both schemas, which are
// dropped afterwards with the floor's.
func TestRunPairedSinglePostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs two daemons on PostgreSQL")
	}
	db := pgtest.DB(t)
	rep, bin, _ := pairedItself(t, RowSingle, 2, db)
	checkPairedShape(t, rep, 2, bin)
	if !strings.HasPrefix(rep.Server, "PostgreSQL ") || len(rep.Schemas) != 2 || rep.Schemas[0] == rep.Schemas[1] ||
		!strings.HasPrefix(rep.Schemas[0], "workspaced_bench_") || rep.Dir != "" {
		t.Errorf("server %q, schemas %v, dir %q: want PostgreSQL, two schemas of their own, no directory", rep.Server, rep.Schemas, rep.Dir)
	}
	if !strings.Contains(rep.Floor.Name, "ON CONFLICT DO UPDATE") {
		t.Errorf("floor %q: want PostgreSQL's", rep.Floor.Name)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'workspaced_bench_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d temporary schemas left (%v)", n, err)
	}
}
