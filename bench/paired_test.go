package bench

import (
	"math"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
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

// rnd is a round of the given span (ms) with one marker per latency (ms).
func rnd(span int, lat ...int) round {
	return round{span: time.Duration(span) * time.Millisecond, lat: durs(lat...)}
}

// TestPairedCompare: per pair B's round time over A's, their median, min
// and max, the pairs A won (a tie is no win), and per side the median
// round, markers/s over the summed rounds against the floor, p50 and p99.
func TestPairedCompare(t *testing.T) {
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
