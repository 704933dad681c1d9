package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// PairedOptions configure RunPaired.
type PairedOptions struct {
	// Dir is where the temporary workspaces go, as in Options.
	Dir string
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

// Shape of the paired rounds.
const (
	// DefaultPairs is how many pairs RunPaired runs by default.
	DefaultPairs = 40
	// pairedAgents finish one subtask each at the same moment, a round.
	pairedAgents = 32
	// pairedRoundsPerTask: a task has subtasks for this many rounds (as
	// the "32 agents at once" row), then the next round takes a new one.
	pairedRoundsPerTask = 8
	// pairedFloorSamples floor writes are timed after every round.
	pairedFloorSamples = 4
)

// PairedSide is what one daemon's rounds measured.
type PairedSide struct {
	// Serve is the binary whose `serve` was the daemon.
	Serve   string `json:"serve"`
	Rounds  int    `json:"rounds"`
	Markers int    `json:"markers"`
	// MedianRoundMS is the median round time: first rename → last read
	// of state.json showing the round's subtasks completed.
	MedianRoundMS float64 `json:"median_round_ms"`
	// MarkersPS is every marker over the sum of the round times.
	MarkersPS float64 `json:"markers_per_sec"`
	// VsFloor is MarkersPS ÷ one durable write per marker at the floor's
	// p50 (measured between the rounds of both sides).
	VsFloor float64 `json:"vs_floor"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

// PairedReport is what RunPaired measured: the same round against two
// daemons, alternately, in one run on one filesystem.
type PairedReport struct {
	Dir    string `json:"dir"`
	FS     FSInfo `json:"filesystem"`
	Agents int    `json:"agents"`
	Pairs  int    `json:"pairs"`
	// Floor is the durable-write floor sampled between the rounds.
	Floor Result     `json:"floor"`
	A     PairedSide `json:"a"`
	B     PairedSide `json:"b"`
	// Ratios holds, per pair, B's round time ÷ A's (above 1: A faster).
	Ratios      []float64 `json:"ratios_b_over_a"`
	RatioMedian float64   `json:"ratio_median"`
	RatioMin    float64   `json:"ratio_min"`
	RatioMax    float64   `json:"ratio_max"`
	// RatioLow and RatioHigh bound the median ratio with about 95 %
	// confidence (order statistics of the ratios, no assumption on their
	// distribution): a difference is resolved only when 1 lies outside.
	RatioLow  float64 `json:"ratio_ci95_low"`
	RatioHigh float64 `json:"ratio_ci95_high"`
	// AFaster counts the pairs whose A round took less time than its B
	// round.
	AFaster int `json:"a_faster"`
}

// round is one round's outcome: its span and every marker's latency.
type round struct {
	span time.Duration
	lat  []time.Duration
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

// side summarizes one daemon's rounds against the floor's p50 in ms.
func side(serve string, rounds []round, floorP50 float64) PairedSide {
	var (
		lat   []time.Duration
		spans = make([]float64, 0, len(rounds))
		total time.Duration
	)
	for _, r := range rounds {
		lat = append(lat, r.lat...)
		spans = append(spans, ms(r.span))
		total += r.span
	}
	s := summarize("", lat, total)
	out := PairedSide{Serve: serve, Rounds: len(rounds), Markers: s.Ops, MedianRoundMS: median(spans),
		MarkersPS: s.OpsPS, P50: s.P50, P99: s.P99}
	out.VsFloor = vsFloor(Result{OpsPS: s.OpsPS}, Result{P50: floorP50}, rateRatio)
	return out
}

// compare fills rep's sides and pair ratios from the rounds of A and B
// (round i of each is pair i) and rep.Floor.
func (rep *PairedReport) compare(serveA, serveB string, a, b []round) {
	rep.A = side(serveA, a, rep.Floor.P50)
	rep.B = side(serveB, b, rep.Floor.P50)
	n := min(len(a), len(b))
	rep.Pairs, rep.Ratios, rep.AFaster = n, make([]float64, 0, n), 0
	for i := range n {
		if a[i].span <= 0 {
			continue
		}
		rep.Ratios = append(rep.Ratios, float64(b[i].span)/float64(a[i].span))
		if a[i].span < b[i].span {
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

// pairedSide is one daemon under the paired rounds: its workspace, the
// task its agents are on, and the next subtask to finish.
type pairedSide struct {
	serve  []string
	rig    *rig
	agents []*agent
	task   string
	tasks  int
	next   int
}

// round runs one round: every agent finishes one subtask at the same
// moment. A new task (and new agents) is prepared when the current one
// has no subtasks left, before the round, off its clock.
func (s *pairedSide) round(ctx context.Context, agentCmd []string) (round, error) {
	size := pairedAgents * pairedRoundsPerTask
	if s.agents == nil || s.next+pairedAgents-1 > size {
		closeAll(s.agents)
		s.agents = nil
		s.tasks++
		s.task = fmt.Sprintf("paired_%d", s.tasks)
		if err := s.rig.prepare(ctx, s.task, size); err != nil {
			return round{}, err
		}
		as, err := s.rig.startAgents(goAgents(Options{AgentCmd: agentCmd}), s.task, pairedAgents)
		if err != nil {
			return round{}, err
		}
		s.agents, s.next = as, 1
	}
	subs := make([][]string, pairedAgents)
	for i := range subs {
		subs[i] = []string{fmt.Sprintf("st_%d", s.next)}
		s.next++
	}
	lat, span, err := burst(s.rig.cm, s.task, s.agents, subs)
	return round{span: span, lat: lat}, err
}

func (s *pairedSide) close() {
	closeAll(s.agents)
	if s.rig != nil {
		s.rig.close()
	}
}

// RunPaired runs the "32 agents at once" round against two daemons in the
// same filesystem, each serving its own workspace and both running the
// whole time: pair after pair, one round on each, A first in even pairs
// and B first in odd ones, so that neither gains from going first or
// from the disk's drift. The agents are the same Go agent processes for
// both; only the daemon differs. One round on each before the pairs warms
// them up and is not counted. The floor is sampled after every round.
func RunPaired(ctx context.Context, opt PairedOptions) (rep *PairedReport, err error) {
	defer interrupted(ctx, &err)
	if opt.Pairs <= 0 {
		opt.Pairs = DefaultPairs
	}
	say := func(format string, args ...any) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, format+"\n", args...)
		}
	}
	base, err := os.MkdirTemp(opt.Dir, ".workspaced-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	defer os.RemoveAll(base)
	rep = &PairedReport{Dir: base, FS: describeFS(base), Agents: pairedAgents}
	fl, err := newFloorer(filepath.Join(base, "floor"))
	if err != nil {
		return nil, err
	}
	defer fl.close()
	sides := [2]*pairedSide{{serve: opt.ServeA}, {serve: opt.ServeB}}
	for i, s := range sides {
		say("start daemon %c: %s serve", 'A'+i, s.serve[0])
		if s.rig, err = newRig(ctx, filepath.Join(base, string(rune('a'+i))), s.serve); err != nil {
			return nil, err
		}
		defer s.close()
	}
	for _, s := range sides { // warm-up
		if _, err := s.round(ctx, opt.AgentCmd); err != nil {
			return nil, err
		}
	}
	var (
		rounds [2][]round
		floors []time.Duration
	)
	for p := range opt.Pairs {
		order := [2]int{0, 1}
		if p%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := sides[i].round(ctx, opt.AgentCmd)
			if err != nil {
				return nil, err
			}
			rounds[i] = append(rounds[i], r)
			fls, err := fl.sample(pairedFloorSamples)
			if err != nil {
				return nil, err
			}
			floors = append(floors, fls...)
		}
		if (p+1)%10 == 0 || p+1 == opt.Pairs {
			say("paired rounds: %d of %d pairs", p+1, opt.Pairs)
		}
	}
	rep.Floor = summarize("floor: temp write + fsync + rename + dir fsync (1 KiB), between rounds", floors, 0)
	rep.Floor.VsFloor = 1
	rep.compare(opt.ServeA[0], opt.ServeB[0], rounds[0], rounds[1])
	return rep, nil
}
