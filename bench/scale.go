package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
)

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	// Dir is where the temporary workspaces go, as in Options.
	Dir string
	// Sizes are the tasks' counts of subtasks (DefaultScaleSizes if
	// empty).
	Sizes []int
	// Lone is how many markers one agent drops one at a time into a task
	// of each size (DefaultScaleLone if 0); Rounds how many bursts of
	// ScaleBurst agents at once follow in another task of that size
	// (DefaultScaleRounds if 0).
	Lone, Rounds int
	// Waiters is how many claims are then waited for one at a time in the
	// first task of each size (DefaultScaleWaiters if 0).
	Waiters int
	// AgentCmd and ServeCmd start the agents and the daemon, as in Options.
	AgentCmd, ServeCmd []string
	// FloorCmd starts the lone floor's process (LoneFloorMain), with
	// "--store" and "--dir" and their values appended; the rows on files
	// and SQLite have no lone floor without it.
	FloorCmd []string
	// Postgres, when set, is a postgres:// root: the rows are measured
	// on PostgreSQL too, in a temporary schema of its database.
	Postgres string
	// SQLite, when set, measures the rows on SQLite too, in a temporary
	// database file in Dir.
	SQLite bool
	// Profile, when set, has each daemon write a CPU profile of its run
	// to Profile + "." + the store's name (serve --cpu-profile).
	Profile string
	// Progress, if set, receives a line per step.
	Progress io.Writer
}

// The shape of RunScale's workload.
const (
	// ScaleBurst agents finish a subtask each at the same moment, a round
	// of the burst rows.
	ScaleBurst = 32
	// DefaultScaleLone markers are dropped one at a time at each size.
	DefaultScaleLone = 60
	// DefaultScaleRounds bursts follow at each size.
	DefaultScaleRounds = 2
)

// DefaultScaleSizes are the task sizes RunScale measures by default.
var DefaultScaleSizes = []int{100, 1000, 10000}

// ScaleRow is one store's markers in a task of one size.
type ScaleRow struct {
	Store    string `json:"store"`
	Subtasks int    `json:"subtasks"`
	// StateKB is the size of the task's state document (state.json, the
	// states row) once the markers are in, in KiB.
	StateKB float64 `json:"state_kib"`
	// Lone is one agent's markers, one at a time, each once the state
	// showed the one before; Burst is ScaleBurst agents finishing a
	// subtask at the same moment, Rounds times.
	Lone  ScaleFigures `json:"lone"`
	Burst ScaleFigures `json:"burst"`
	// Floor is the bare write of a document of the state's size in the
	// store, measured beside the row (scalefloor.go).
	Floor ScaleFloor `json:"floor"`
	// LoneFloor is the least any daemon spends on a lone marker, measured
	// as Lone is (lonefloor.go); nil on PostgreSQL.
	LoneFloor *LoneFloor `json:"lone_floor,omitempty"`
	// Verdict is Waiters claims waited for one at a time, after the lone
	// markers, in their task.
	Verdict VerdictFigures `json:"verdict"`
}

// ScaleFigures are the daemon's CPU per marker and each marker's latency
// (its drop → the first read of a state showing it).
type ScaleFigures struct {
	Markers int `json:"markers"`
	// CPUms is the daemon process's CPU time (user and system, all its
	// threads) from the first marker's drop to the last one seen in the
	// state, divided by the markers.
	CPUms float64 `json:"cpu_ms_per_marker"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
}

// ScaleReport is what RunScale measured.
type ScaleReport struct {
	FS   FSInfo     `json:"filesystem"`
	Rows []ScaleRow `json:"rows"`
	// CPUClock says how the daemon's CPU was read.
	CPUClock string   `json:"cpu_clock"`
	Notes    []string `json:"notes,omitempty"`
}

// RunScale measures how a marker's cost grows with its task: in tasks of
// each of opt.Sizes subtasks (an approved plan of independent subtasks),
// one Go agent drops opt.Lone done markers one at a time, then, in another
// task of that size, ScaleBurst agents finish a subtask each at the same
// moment, opt.Rounds times; each row gives the daemon's CPU per marker,
// read from the process's CPU clock, and the markers' latency. It runs on
// files in a temporary directory in opt.Dir, then on SQLite and
// PostgreSQL when opt asks. One warm-up marker precedes each measure.
// With opt.FloorCmd, each row on files and SQLite also has its lone
// floor: the CPU a marker of a minimal process doing only what any
// daemon must for a lone marker, measured as the daemon's (lonefloor.go).
func RunScale(ctx context.Context, opt ScaleOptions) (rep *ScaleReport, err error) {
	defer interrupted(ctx, &err)
	if len(opt.Sizes) == 0 {
		opt.Sizes = DefaultScaleSizes
	}
	if opt.Lone <= 0 {
		opt.Lone = DefaultScaleLone
	}
	if opt.Rounds <= 0 {
		opt.Rounds = DefaultScaleRounds
	}
	if opt.Waiters <= 0 {
		opt.Waiters = DefaultScaleWaiters
	}
	for _, n := range opt.Sizes {
		if n < 1+opt.Lone+opt.Waiters || n < 1+ScaleBurst*opt.Rounds {
			return nil, fmt.Errorf("bench: a task of %d subtasks is too small for %d lone markers, %d waiters and %d rounds of %d (one more for the warm-up)",
				n, opt.Lone, opt.Waiters, opt.Rounds, ScaleBurst)
		}
	}
	base, err := os.MkdirTemp(opt.Dir, ".workspaced-bench-scale-")
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	defer os.RemoveAll(base)
	rep = &ScaleReport{FS: describeFS(base), CPUClock: cpuClockName}
	say := Options{Progress: opt.Progress}.say
	profile := func(store string) []string {
		if opt.Profile == "" {
			return nil
		}
		return []string{"--cpu-profile", opt.Profile + "." + store}
	}
	stores := []struct {
		name   string
		newRig func() (*rig, error)
	}{{"files", func() (*rig, error) {
		return newRig(ctx, filepath.Join(base, "files"), opt.ServeCmd, profile("files")...)
	}}}
	if opt.SQLite {
		stores = append(stores, struct {
			name   string
			newRig func() (*rig, error)
		}{"sqlite", func() (*rig, error) {
			return newServedSQLiteRig(ctx, filepath.Join(base, "scale.db"), opt.ServeCmd, profile("sqlite")...)
		}})
	}
	if opt.Postgres != "" {
		stores = append(stores, struct {
			name   string
			newRig func() (*rig, error)
		}{"postgres", func() (*rig, error) { return newServedPGRig(ctx, opt.Postgres, opt.ServeCmd, profile("postgres")...) }})
	}
	for _, s := range stores {
		say("scale: %s, tasks of %v subtasks", s.name, opt.Sizes)
		rows, err := scaleStore(ctx, s.newRig, s.name, base, opt, say)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	rep.Notes = append(rep.Notes, verdictClock)
	rep.Notes = append(rep.Notes, fmt.Sprintf("CPU: the daemon process's CPU time (%s) over the markers of a row, divided by them; it includes what the daemon does between them", cpuClockName))
	for _, s := range stores {
		rep.Notes = append(rep.Notes, fmt.Sprintf("floor on %s: %s, %d times; the writing thread's CPU per write", s.name, floorName(s.name), ScaleFloorWrites))
	}
	if len(opt.FloorCmd) > 0 {
		rep.Notes = append(rep.Notes, "lone floor: "+loneFloorNote)
	}
	return rep, nil
}

// scaleStore measures every size on one store, served by one daemon.
func scaleStore(ctx context.Context, newRig func() (*rig, error), name, base string, opt ScaleOptions, say func(string, ...any)) ([]ScaleRow, error) {
	r, err := newRig()
	if err != nil {
		return nil, err
	}
	defer r.close()
	pid := r.srv.cmd.Process.Pid
	var out []ScaleRow
	for _, n := range opt.Sizes {
		row := ScaleRow{Store: name, Subtasks: n}
		say("scale: %s, %d subtasks: %d markers one at a time", name, n, opt.Lone)
		lone := fmt.Sprintf("lone_%d", n)
		if row.Lone, err = r.scaleLone(ctx, opt, pid, lone, n); err != nil {
			return nil, err
		}
		say("scale: %s, %d subtasks: %d claims waited for one at a time", name, n, opt.Waiters)
		if row.Verdict, err = r.scaleVerdict(ctx, lone, 2+opt.Lone, opt.Waiters); err != nil {
			return nil, err
		}
		say("scale: %s, %d subtasks: %d × %d agents at once", name, n, opt.Rounds, ScaleBurst)
		if row.Burst, err = r.scaleBurst(ctx, opt, pid, fmt.Sprintf("burst_%d", n), n); err != nil {
			return nil, err
		}
		doc, err := r.stateDoc(ctx, lone)
		if err != nil {
			return nil, err
		}
		row.StateKB = float64(len(doc)) / 1024
		say("scale: %s, %d subtasks: the floor, %d writes of %.0f KiB", name, n, ScaleFloorWrites, row.StateKB)
		if row.Floor, err = r.scaleFloor(ctx, base, doc); err != nil {
			return nil, err
		}
		if len(opt.FloorCmd) > 0 && name != "postgres" {
			say("scale: %s, %d subtasks: the lone floor, %d markers one at a time", name, n, opt.Lone)
			lf, err := scaleLoneFloor(ctx, opt.FloorCmd, name, base, doc, opt.Lone)
			if err != nil {
				return nil, err
			}
			row.LoneFloor = &lf
		}
		out = append(out, row)
	}
	return out, nil
}

// scaleLone: one agent, a warm-up marker, then opt.Lone markers one at a
// time.
func (r *rig) scaleLone(ctx context.Context, opt ScaleOptions, pid int, task string, n int) (ScaleFigures, error) {
	if err := r.prepareOutputs(ctx, task, n, 1+opt.Lone); err != nil {
		return ScaleFigures{}, err
	}
	as, err := r.startAgents(goAgents(Options{AgentCmd: opt.AgentCmd}), task, 1)
	if err != nil {
		return ScaleFigures{}, err
	}
	defer closeAll(as)
	if _, _, err := r.one(as[0], task, "st_1"); err != nil {
		return ScaleFigures{}, err
	}
	return timeLone(pid, opt.Lone, func(i int) (time.Duration, error) {
		d, _, err := r.one(as[0], task, fmt.Sprintf("st_%d", i))
		return d, err
	})
}

// timeLone times n lone markers, numbered 2 to 1+n (1 was the warm-up),
// each dropped by one once the one before was taken, and the CPU process
// pid spent meanwhile.
func timeLone(pid, n int, one func(i int) (time.Duration, error)) (ScaleFigures, error) {
	c0, err := cpuTime(pid)
	if err != nil {
		return ScaleFigures{}, err
	}
	lat := make([]time.Duration, 0, n)
	for i := 2; i <= 1+n; i++ {
		d, err := one(i)
		if err != nil {
			return ScaleFigures{}, err
		}
		lat = append(lat, d)
	}
	c1, err := cpuTime(pid)
	if err != nil {
		return ScaleFigures{}, err
	}
	return figures(lat, c1-c0), nil
}

// scaleBurst: ScaleBurst agents, a warm-up marker, then opt.Rounds rounds
// of every agent finishing a subtask at the same moment.
func (r *rig) scaleBurst(ctx context.Context, opt ScaleOptions, pid int, task string, n int) (ScaleFigures, error) {
	if err := r.prepareOutputs(ctx, task, n, 1+ScaleBurst*opt.Rounds); err != nil {
		return ScaleFigures{}, err
	}
	as, err := r.startAgents(goAgents(Options{AgentCmd: opt.AgentCmd}), task, ScaleBurst)
	if err != nil {
		return ScaleFigures{}, err
	}
	defer closeAll(as)
	if _, _, err := r.one(as[0], task, "st_1"); err != nil {
		return ScaleFigures{}, err
	}
	var lat []time.Duration
	c0, err := cpuTime(pid)
	if err != nil {
		return ScaleFigures{}, err
	}
	next := 2
	for range opt.Rounds {
		subs := make([][]string, len(as))
		for i := range subs {
			subs[i] = []string{fmt.Sprintf("st_%d", next)}
			next++
		}
		l, _, err := burst(r.cm, task, as, subs)
		if err != nil {
			return ScaleFigures{}, err
		}
		lat = append(lat, l...)
	}
	c1, err := cpuTime(pid)
	if err != nil {
		return ScaleFigures{}, err
	}
	return figures(lat, c1-c0), nil
}

func figures(lat []time.Duration, cpu time.Duration) ScaleFigures {
	s := summarize("", lat, 0)
	return ScaleFigures{Markers: len(lat), CPUms: ms(cpu) / float64(len(lat)), P50: s.P50, P99: s.P99}
}

// stateDoc is task's state document as canonical JSON, as the daemon
// writes it.
func (r *rig) stateDoc(ctx context.Context, task string) ([]byte, error) {
	st, err := r.st.ReadState(ctx, task)
	if err != nil {
		return nil, err
	}
	return atomicfile.Marshal(st)
}
