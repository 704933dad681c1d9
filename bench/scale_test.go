package bench

import (
	"context"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/testbin"
)

// TestRunScaleFiles runs the scale rows on files for tasks of 100 and 200
// subtasks, with few markers: a row a size, in order, each with the
// daemon's CPU and the markers' latency, the larger task's state the
// larger, a profile of the daemon written when asked, and nothing left
// in the directory. It asserts no timing.
func TestRunScaleFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs a daemon")
	}
	bin, dir := testbin.Must(t), t.TempDir()
	prof := t.TempDir() + "/cpu"
	rep, err := RunScale(context.Background(), ScaleOptions{Dir: dir, Sizes: []int{100, 200}, Lone: 5, Rounds: 1, Waiters: 3, Profile: prof,
		AgentCmd: []string{bin, "bench", "agent"}, ServeCmd: []string{bin, "--root"}, FloorCmd: []string{bin, "bench", "lone-floor"}})
	if err != nil {
		t.Fatalf("RunScale: %v", err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Subtasks != 100 || rep.Rows[1].Subtasks != 200 {
		t.Fatalf("rows %+v: want files at 100 then 200 subtasks", rep.Rows)
	}
	for _, r := range rep.Rows {
		if r.Store != "files" || r.Lone.Markers != 5 || r.Burst.Markers != ScaleBurst || r.Verdict.Waiters != 3 {
			t.Errorf("row %+v: want files, 5 lone markers, %d in the burst, 3 waiters", r, ScaleBurst)
		}
		if r.Floor.Writes != ScaleFloorWrites {
			t.Errorf("row %+v: floor of %d writes, want %d", r, r.Floor.Writes, ScaleFloorWrites)
		}
		if r.LoneFloor == nil || r.LoneFloor.Markers != 5 {
			t.Fatalf("row %+v: lone floor %+v, want one of 5 markers", r, r.LoneFloor)
		}
		for what, v := range map[string]float64{"lone CPU": r.Lone.CPUms, "lone p50": r.Lone.P50, "burst CPU": r.Burst.CPUms, "burst p99": r.Burst.P99,
			"verdict p50": r.Verdict.P50, "verdict p99": r.Verdict.P99, "state": r.StateKB, "floor CPU": r.Floor.CPUms, "floor p50": r.Floor.P50,
			"lone floor CPU": r.LoneFloor.CPUms, "lone floor p50": r.LoneFloor.P50} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%d subtasks: %s = %v, want finite and > 0", r.Subtasks, what, v)
			}
		}
	}
	if rep.Rows[1].StateKB <= rep.Rows[0].StateKB {
		t.Errorf("state of 200 subtasks %.1f KiB, of 100 %.1f KiB: want it larger", rep.Rows[1].StateKB, rep.Rows[0].StateKB)
	}
	if !strings.Contains(rep.CPUClock, "clock") {
		t.Errorf("CPU clock %q: want it named", rep.CPUClock)
	}
	if fi, err := os.Stat(prof + ".files"); err != nil || fi.Size() == 0 {
		t.Errorf("daemon's profile: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in %s", len(left), dir)
	}
}

// TestScaleLoneFloor runs the lone floor's process on files and SQLite
// with a few markers: each figure filled, finite and positive, and every
// marker journaled once, its event logged, none left (check). It asserts
// no timing.
func TestScaleLoneFloor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds workspaced and runs its lone floor")
	}
	bin := testbin.Must(t)
	doc := []byte(`{"task_id":"t","subtasks":{` + strings.Repeat(`"st_x":{"status":"pending"},`, 100) + `"st_y":{}}}`)
	for _, store := range []string{"files", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			lf, err := scaleLoneFloor(context.Background(), []string{bin, "bench", "lone-floor"}, store, dir, doc, 7)
			if err != nil {
				t.Fatalf("scaleLoneFloor: %v", err)
			}
			if lf.Markers != 7 {
				t.Errorf("%d markers, want 7", lf.Markers)
			}
			for what, v := range map[string]float64{"CPU": lf.CPUms, "p50": lf.P50} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
					t.Errorf("%s = %v, want finite and > 0", what, v)
				}
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d files left in %s", len(left), dir)
			}
		})
	}
}

// The lone floor's process refuses a store it has none for.
func TestScaleLoneFloorNoStore(t *testing.T) {
	err := LoneFloorMain("postgres", t.TempDir(), strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no lone floor") {
		t.Errorf("LoneFloorMain on postgres: %v, want it refused", err)
	}
}

// RunScale refuses sizes too small for the markers asked.
func TestRunScaleTooSmall(t *testing.T) {
	_, err := RunScale(context.Background(), ScaleOptions{Dir: t.TempDir(), Sizes: []int{100}, Lone: 100})
	if err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("100 lone markers in a task of 100: %v, want it refused as too small", err)
	}
}
