package bench

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func durs(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      int
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value is every percentile", durs(7), 99, 7 * time.Millisecond},
		{"median of odd count", durs(1, 2, 3), 50, 2 * time.Millisecond},
		{"median of even count is the lower middle", durs(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", durs(hundred...), 99, 99 * time.Millisecond},
		{"p50 of 100 is the 50th", durs(hundred...), 50, 50 * time.Millisecond},
		{"p99 of few is the largest", durs(1, 2, 3, 40), 99, 40 * time.Millisecond},
		{"p1 of 100 is the smallest", durs(hundred...), 1, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("percentile(%v, %d) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		lat            []time.Duration
		wall           time.Duration
		ops            int
		p50, p99, opsS float64
	}{
		{"empty", nil, time.Second, 0, 0, 0, 0},
		{"unsorted input", durs(30, 10, 20), time.Second, 3, 20, 30, 3},
		{"rate over the wall time", durs(1, 1, 1, 1), 500 * time.Millisecond, 4, 1, 1, 8},
		{"no wall, no rate", durs(5), 0, 1, 5, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := summarize("x", tt.lat, tt.wall)
			if r.Name != "x" || r.Ops != tt.ops || r.P50 != tt.p50 || r.P99 != tt.p99 || r.OpsPS != tt.opsS {
				t.Errorf("summarize = %+v, want ops %d p50 %v p99 %v ops/s %v", r, tt.ops, tt.p50, tt.p99, tt.opsS)
			}
			if r.P50 > r.P99 {
				t.Errorf("p50 %v > p99 %v", r.P50, r.P99)
			}
		})
	}
}

func TestVsFloor(t *testing.T) {
	t.Parallel()
	floor := Result{P50: 4, OpsPS: 200} // 4 ms: 250 durable writes/s at p50
	tests := []struct {
		name  string
		r     Result
		floor Result
		kind  int
		want  float64
	}{
		{"latency: p50 over the floor's p50", Result{P50: 12}, floor, latencyRatio, 3},
		{"latency faster than the floor", Result{P50: 1}, floor, latencyRatio, 0.25},
		{"rate: ops/s over one durable write per op", Result{OpsPS: 1250}, floor, rateRatio, 5},
		{"rate ignores the floor's own ops/s", Result{OpsPS: 250}, Result{P50: 4, OpsPS: 1}, rateRatio, 1},
		{"no floor", Result{P50: 3, OpsPS: 3}, Result{}, latencyRatio, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := vsFloor(tt.r, tt.floor, tt.kind)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("vsFloor = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "1234 (workspaced) S 1 1234 1234 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 8 0", 1750 * time.Millisecond, false},
		{"name with spaces and parens", "99 (a (b) c) R 1 99 99 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0", 70 * time.Millisecond, false},
		{"no name", "1234 S 1", 0, true},
		{"too few fields", "1 (x) S 1 2 3", 0, true},
		{"not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 4 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"present", "Name:\tworkspaced\nVmPeak:\t  9000 kB\nVmRSS:\t   17712 kB\nThreads:\t8\n", 17712 << 10, false},
		{"missing", "Name:\tworkspaced\nThreads:\t8\n", 0, true},
		{"garbled", "VmRSS:\tlots kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatusRSS(tt.status)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFloorer(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "floor")
	fl, err := newFloorer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.close()
	lat, err := fl.sample(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 3 {
		t.Fatalf("%d samples, want 3", len(lat))
	}
	for _, d := range lat {
		if d <= 0 {
			t.Errorf("sample %v, want > 0", d)
		}
	}
	for _, name := range []string{"f1", "f2", "f3"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || len(b) != 1024 {
			t.Errorf("%s: %d bytes, %v; want the 1 KiB written durably", name, len(b), err)
		}
	}
	if got := floorP50(durs(5, 1, 3)); got != 3 {
		t.Errorf("floorP50 = %v, want 3", got)
	}
}
