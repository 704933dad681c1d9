package bench_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/clitest"
)

// TestBenchQuickJSON runs the whole workload in quick mode through the
// binary and checks the report's shape and its internal consistency. It
// asserts no timing: the figures depend on the machine.
func TestBenchQuickJSON(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the whole quick workload (about 15 s)")
	}
	w := clitest.NewDir(t)
	out := w.Ok("bench", "--quick", "--json", "--dir", t.TempDir())
	var rep bench.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out)
	}
	if !rep.Quick {
		t.Errorf("quick = false in a --quick run")
	}
	if strings.Contains(strings.Join(rep.Notes, "\n"), "--no-files") {
		t.Errorf("a note saying the files were left out, without --no-files: %q", rep.Notes)
	}
	if rep.FS.Type == "" || rep.FS.MountPoint == "" {
		t.Errorf("filesystem not named: %+v", rep.FS)
	}
	finite := func(name, what string, v float64) {
		t.Helper()
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			t.Errorf("%s: %s = %v, want finite and > 0", name, what, v)
		}
	}
	checkResult := func(r bench.Result) {
		t.Helper()
		if r.Ops <= 0 {
			t.Errorf("%s: ops = %d, want > 0", r.Name, r.Ops)
		}
		finite(r.Name, "ops/s", r.OpsPS)
		finite(r.Name, "p50", r.P50)
		finite(r.Name, "p99", r.P99)
		finite(r.Name, "vs_floor", r.VsFloor)
		if r.P50 > r.P99 {
			t.Errorf("%s: p50 %v > p99 %v", r.Name, r.P50, r.P99)
		}
	}
	if !strings.HasPrefix(rep.Floor.Name, "floor") {
		t.Errorf("floor named %q", rep.Floor.Name)
	}
	checkResult(rep.Floor)
	if rep.Floor.VsFloor != 1 {
		t.Errorf("floor vs_floor = %v, want 1", rep.Floor.VsFloor)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	// Each expected result by name prefix, and how it compares with the
	// floor of the same run.
	type expected struct {
		prefix string
		rate   bool // ops/s ÷ one durable write per op; else p50 ÷ floor p50
	}
	want := []expected{
		{"env store 1 KiB", false}, {"env get 1 KiB", false}, {"env update 1 KiB", false}, {"env list 1 KiB", false},
		{"env store 100 KiB", false}, {"env get 100 KiB", false}, {"env update 100 KiB", false}, {"env list 100 KiB", false},
		{"state watcher:", false},
		{"daemon 1 agent,", false}, {"daemon 8 agents at once", true}, {"daemon 32 agents at once", true},
		{"daemon 32 agents ×", true},
	}
	// The Python agents' rows come when python3 is on PATH; a note says
	// when they were skipped.
	if _, err := exec.LookPath("python3"); err == nil {
		want = append(want, expected{"daemon 1 python agent,", false}, expected{"daemon 32 python agents at once", true})
		if rep.Python == "" {
			t.Errorf("python3 on PATH, but no Python agents ran")
		}
	} else if !strings.Contains(strings.Join(rep.Notes, "\n"), "python3 is not on PATH") {
		t.Errorf("no python3 and no note saying its rows were skipped: %q", rep.Notes)
	}
	if len(rep.Results) != len(want) {
		t.Errorf("%d results, want %d", len(rep.Results), len(want))
	}
	for _, wr := range want {
		var found *bench.Result
		for i := range rep.Results {
			if strings.HasPrefix(rep.Results[i].Name, wr.prefix) {
				if found != nil {
					t.Errorf("two results named %q…", wr.prefix)
				}
				found = &rep.Results[i]
			}
		}
		if found == nil {
			t.Errorf("no result named %q…", wr.prefix)
			continue
		}
		checkResult(*found)
		// The daemon's rows carry the floor measured between their
		// rounds and compare with the lower of it and the run's floor;
		// the others with the run's floor.
		floor := rep.Floor.P50
		if strings.HasPrefix(wr.prefix, "daemon") {
			finite(found.Name, "floor_p50_ms", found.FloorP50)
			floor = math.Min(floor, found.FloorP50)
			if !strings.Contains(found.Note, fmt.Sprintf("%.2f ms", floor)) {
				t.Errorf("%s: note %q does not name the floor it compares with", found.Name, found.Note)
			}
		} else if found.FloorP50 != 0 {
			t.Errorf("%s: floor_p50_ms = %v, want none", found.Name, found.FloorP50)
		}
		ratio := found.P50 / floor
		if wr.rate {
			ratio = found.OpsPS / (1000 / floor)
		}
		if !near(found.VsFloor, ratio) {
			t.Errorf("%s: vs_floor = %v, want %v against its floor", found.Name, found.VsFloor, ratio)
		}
	}
	if rep.IdleTasks <= 0 || rep.IdleSeconds <= 0 {
		t.Errorf("idle measured over %d tasks and %v s, want both > 0", rep.IdleTasks, rep.IdleSeconds)
	}
	if rep.IdleCPUms < 0 || math.IsNaN(rep.IdleCPUms) {
		t.Errorf("idle CPU = %v ms, want ≥ 0", rep.IdleCPUms)
	}
	finite("idle", "rss_mib", rep.RSSMiB)
}

// TestBenchVsDaemonItself runs two pairs of rounds of this binary's
// daemon against itself through the binary and checks the report's
// shape and consistency (no timing: the figures depend on the machine).
func TestBenchVsDaemonItself(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two daemons and 32 agents (about 10 s)")
	}
	w := clitest.NewDir(t)
	out := w.Ok("bench", "--vs-daemon", clitest.Bin(), "--pairs", "2", "--json", "--dir", t.TempDir())
	var rep bench.PairedReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out)
	}
	if rep.Pairs != 2 || len(rep.Ratios) != 2 || rep.Agents != 32 {
		t.Fatalf("pairs %d, ratios %v, agents %d; want 2 pairs of 32 agents", rep.Pairs, rep.Ratios, rep.Agents)
	}
	for name, s := range map[string]bench.PairedSide{"A": rep.A, "B": rep.B} {
		if s.Rounds != 2 || s.Markers != 64 || s.Serve != clitest.Bin() {
			t.Errorf("side %s = %+v, want 2 rounds, 64 markers, served by %s", name, s, clitest.Bin())
		}
		if !(s.MedianRoundMS > 0 && s.MarkersPS > 0 && s.VsFloor > 0 && s.P50 > 0 && s.P50 <= s.P99) {
			t.Errorf("side %s has figures that cannot be: %+v", name, s)
		}
	}
	if !(rep.RatioMin <= rep.RatioLow && rep.RatioLow <= rep.RatioMedian && rep.RatioMedian <= rep.RatioHigh &&
		rep.RatioHigh <= rep.RatioMax && rep.RatioMin > 0) {
		t.Errorf("ratios min %v, CI low %v, median %v, CI high %v, max %v: out of order",
			rep.RatioMin, rep.RatioLow, rep.RatioMedian, rep.RatioHigh, rep.RatioMax)
	}
	if rep.AFaster < 0 || rep.AFaster > 2 || rep.Floor.Ops != 4*2*2 || rep.Floor.P50 <= 0 {
		t.Errorf("A faster in %d pairs, floor %+v", rep.AFaster, rep.Floor)
	}
	// The table for people names both daemons, the filesystem and the
	// ratio, and row 1 says what it compares: a round's median latency;
	// the progress goes to stderr. (Row 32's table, its round time, is
	// the one TestBenchVsDaemonPostgres reads: the same table but for the
	// line naming where the daemons served.)
	r := w.Run("bench", "--vs-daemon", clitest.Bin(), "--row", "1", "--pairs", "1", "--dir", t.TempDir())
	if r.Code != 0 || !strings.Contains(r.Stderr, "paired rounds: 1 of 1 pairs") {
		t.Fatalf("bench --vs-daemon --row 1 --pairs 1: %v", r)
	}
	for _, want := range []string{"--row 1: 1 pairs of rounds, 1 Go agent", "A (this)", "filesystem:", "MEDIAN LATENCY MS", "B ÷ A median latency of a round"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("row 1 table lacks %q:\n%s", want, r.Stdout)
		}
	}
}
