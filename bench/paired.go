package bench

import (
	"io"
	"math"
	"slices"
	"time"
)

// PairedOptions configure RunPaired.
type PairedOptions struct {
	// Dir is where the temporary workspaces go, as in Options (unused on
	// PostgreSQL).
	Dir string
	// Postgres, when set, is a postgres:// root: each daemon serves a
	// temporary schema of its own in that database (created and dropped
	// afterwards; the role needs CREATE there) instead of a workspace in
	// Dir, and the floor is PostgreSQL's (RunPostgres's).
	Postgres string
	// SQLite, when set (and Postgres is not), has each daemon serve a
	// temporary SQLite database of its own in Dir, with SQLite's floor
	// (RunSQLite's) beside them.
	SQLite bool
	// Row is the row compared: RowAtOnce (the default, also for 0) or
	// RowSingle.
	Row int
	// Pairs is how many pairs of rounds to run (DefaultPairs if 0).
	Pairs int
	// AgentCmd starts one Go agent process, as in Options; both daemons
	// get the same agents.
	AgentCmd []string
	// ServeA and ServeB start the two daemons compared (each a binary and
	// "--root", as Options.ServeCmd).
	ServeA, ServeB []string
	// Progress, if set, receives a line per step.
	Progress io.Writer
}

// The rows RunPaired compares, named by their count of agents.
const (
	// RowAtOnce is 32 Go agents finishing one subtask each at the same
	// moment, a round; a round's figure is its time (first rename → last
	// read of a state showing the round's subtasks completed), as in the
	// "32 agents at once" row.
	RowAtOnce = 32
	// RowSingle is one Go agent dropping one marker at a time, each once
	// the state showed the one before, pairedSingleMarkers a round; a
	// round's figure is its markers' median latency (rename → first read
	// of a state showing it), as in the "1 agent" row.
	RowSingle = 1
)

// Shape of the paired rounds.
const (
	// DefaultPairs is how many pairs RunPaired runs by default.
	DefaultPairs = 40
	// pairedAgents finish one subtask each at the same moment, a round
	// of RowAtOnce.
	pairedAgents = RowAtOnce
	// pairedRoundsPerTask: a task has subtasks for this many rounds of
	// RowAtOnce (as the "32 agents at once" row), then the next round
	// takes a new one.
	pairedRoundsPerTask = 8
	// pairedFloorSamples floor writes are timed after every round of
	// RowAtOnce.
	pairedFloorSamples = 4
	// pairedSingleMarkers markers make a round of RowSingle, each
	// followed by one floor write (as in the "1 agent" row).
	pairedSingleMarkers = 20
	// pairedSingleTask subtasks make a task of RowSingle (the "1 agent"
	// row's task); the round that needs more takes a new one.
	pairedSingleTask = 100
)

// PairedSide is what one daemon's rounds measured.
type PairedSide struct {
	// Serve is the binary whose `serve` was the daemon.
	Serve   string `json:"serve"`
	Rounds  int    `json:"rounds"`
	Markers int    `json:"markers"`
	// MedianRoundMS is the median of the rounds' figures: on RowAtOnce
	// the round time (first rename → last read of state.json showing the
	// round's subtasks completed), on RowSingle a round's median latency.
	MedianRoundMS float64 `json:"median_round_ms"`
	// MarkersPS is every marker over the sum of the round times (on
	// RowSingle, of the waits for each marker's state).
	MarkersPS float64 `json:"markers_per_sec"`
	// VsFloor compares with the floor's p50 (measured between the rounds
	// of both sides): on RowAtOnce MarkersPS ÷ one durable write per
	// marker (higher is better), on RowSingle P50 ÷ the floor's p50
	// (lower is better), as the rows of Run.
	VsFloor float64 `json:"vs_floor"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

// PairedReport is what RunPaired measured: the same round against two
// daemons, alternately, in one run on one filesystem or database.
type PairedReport struct {
	// Dir and FS are the filesystem measured; empty on PostgreSQL.
	Dir string `json:"dir,omitempty"`
	FS  FSInfo `json:"filesystem"`
	// Server is PostgreSQL's version, Schemas the temporary schemas of
	// daemon A and daemon B (dropped afterwards), when the daemons served
	// a database.
	Server  string   `json:"server,omitempty"`
	Schemas []string `json:"schemas,omitempty"`
	// Row is the row compared (RowAtOnce or RowSingle), Agents its agents
	// and PerRound the markers of one round.
	Row      int `json:"row"`
	Agents   int `json:"agents"`
	PerRound int `json:"markers_per_round"`
	Pairs    int `json:"pairs"`
	// Floor is the durable-write floor sampled between the rounds (on
	// PostgreSQL, one committed upsert of 1 KiB).
	Floor Result     `json:"floor"`
	A     PairedSide `json:"a"`
	B     PairedSide `json:"b"`
	// Ratios holds, per pair, B's round figure ÷ A's (above 1: A faster).
	Ratios      []float64 `json:"ratios_b_over_a"`
	RatioMedian float64   `json:"ratio_median"`
	RatioMin    float64   `json:"ratio_min"`
	RatioMax    float64   `json:"ratio_max"`
	// RatioLow and RatioHigh bound the median ratio with about 95 %
	// confidence (order statistics of the ratios, no assumption on their
	// distribution): a difference is resolved only when 1 lies outside.
	RatioLow  float64 `json:"ratio_ci95_low"`
	RatioHigh float64 `json:"ratio_ci95_high"`
	// AFaster counts the pairs whose A round figure was lower than its B
	// round's.
	AFaster int `json:"a_faster"`
}

// round is one round's outcome: its span (the time the harness waited
// for it), every marker's latency, the figure pairs compare (ms), and
// the floor samples taken within it.
type round struct {
	span   time.Duration
	lat    []time.Duration
	figure float64
	floors []time.Duration
}

// median of values (the mean of the two middle ones for an even count);
// 0 for none. values is sorted in place.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	n := len(values)
	if n%2 == 1 {
		return values[n/2]
	}
	return (values[n/2-1] + values[n/2]) / 2
}

// side summarizes one daemon's rounds of row against the floor's p50 in
// ms.
func side(serve string, row int, rounds []round, floorP50 float64) PairedSide {
	var (
		lat     []time.Duration
		figures = make([]float64, 0, len(rounds))
		total   time.Duration
	)
	for _, r := range rounds {
		lat = append(lat, r.lat...)
		figures = append(figures, r.figure)
		total += r.span
	}
	s := summarize("", lat, total)
	out := PairedSide{Serve: serve, Rounds: len(rounds), Markers: s.Ops, MedianRoundMS: median(figures),
		MarkersPS: s.OpsPS, P50: s.P50, P99: s.P99}
	if row == RowSingle {
		out.VsFloor = vsFloor(Result{P50: s.P50}, Result{P50: floorP50}, latencyRatio)
	} else {
		out.VsFloor = vsFloor(Result{OpsPS: s.OpsPS}, Result{P50: floorP50}, rateRatio)
	}
	return out
}

// compare fills rep's sides and pair ratios from the rounds of A and B
// (round i of each is pair i), rep.Row and rep.Floor.
func (rep *PairedReport) compare(serveA, serveB string, a, b []round) {
	rep.A = side(serveA, rep.Row, a, rep.Floor.P50)
	rep.B = side(serveB, rep.Row, b, rep.Floor.P50)
	n := min(len(a), len(b))
	rep.Pairs, rep.Ratios, rep.AFaster = n, make([]float64, 0, n), 0
	for i := range n {
		if a[i].figure <= 0 {
			continue
		}
		rep.Ratios = append(rep.Ratios, b[i].figure/a[i].figure)
		if a[i].figure < b[i].figure {
			rep.AFaster++
		}
	}
	if len(rep.Ratios) == 0 {
		return
	}
	rep.RatioMin, rep.RatioMax = slices.Min(rep.Ratios), slices.Max(rep.Ratios)
	sorted := slices.Clone(rep.Ratios)
	rep.RatioMedian = median(sorted)
	rep.RatioLow, rep.RatioHigh = medianCI(sorted)
}

// medianCI bounds the median of sorted values with about 95 %
// confidence: the k-th smallest and k-th largest, k = ⌊(n − 1.96·√n)/2⌋
// (the normal approximation of the binomial count of values below the
// median). With fewer than 6 values it is the whole range.
func medianCI(sorted []float64) (lo, hi float64) {
	n := len(sorted)
	if n == 0 {
		return 0, 0
	}
	k := int((float64(n) - 1.96*math.Sqrt(float64(n))) / 2)
	k = max(k, 1)
	return sorted[k-1], sorted[n-k]
}
