// Package bench is the workload behind `workspaced bench`: it measures the
// workspace's operations and the daemon on a temporary workspace (by
// default in the same filesystem as the real root, or in a directory of
// the caller's choosing), each beside the disk's own floor (a temporary
// write, fsync, rename and directory fsync) measured in the same run, so
// the figures say how close to the hardware the code gets.
//
// The daemon is a `workspaced serve` process, observed from outside as its
// agents observe it: the harness waits for its lock, and learns when a
// marker took effect by watching the task directory with fsnotify and
// reading each state.json that replaces the last one. The agents are
// ordinary processes too: Go agents (the binary re-executed in agent mode,
// see AgentMain) write a marker with the os calls any Go program makes
// (temporary file, fsync, close, rename into the task directory, fsync of
// the directory), and, when python3 is on PATH, Python agents drop theirs
// with the example module examples/agents/python/workspace_agent.py. A
// marker's latency runs from just before its agent's rename to the first
// read of a state.json showing the subtask completed.
//
// RunPaired runs the same round against two daemon binaries, alternately,
// in one run: how a change to the daemon is judged.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// Options configure Run.
type Options struct {
	// Dir is where the temporary workspaces go (a fresh directory inside
	// it, removed afterwards): the filesystem measured.
	Dir string
	// Quick runs fewer iterations and a smaller tree (seconds, not minutes).
	Quick bool
	// AgentCmd is the command that starts one Go agent process (the binary
	// and its agent-mode arguments); AgentMain runs on the other side.
	AgentCmd []string
	// ServeCmd starts `workspaced serve` for a root given as the last
	// argument's value (the binary and "--root").
	ServeCmd []string
	// NoPython leaves out the Python agents' rows even when python3 is
	// on PATH.
	NoPython bool
	// NoFiles leaves out the workload on files, for a run on a database
	// (Postgres or SQLite) that wants the database's rows only.
	NoFiles bool
	// Postgres, when set, is a postgres:// root: the same workload runs
	// on it too, in a temporary schema of its database (RunPostgres).
	Postgres string
	// SQLite, when set, runs the same workload on SQLite too, in a
	// temporary database file in Dir (RunSQLite).
	SQLite bool
	// Progress, if set, receives a line per step.
	Progress io.Writer
}

// Result is one measured operation.
type Result struct {
	Name  string  `json:"name"`
	Ops   int     `json:"ops"`
	OpsPS float64 `json:"ops_per_sec"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	// VsFloor compares with the durable-write floor: for latencies, p50 /
	// floor p50 (lower is better); for throughput ("x_floor_rate"), ops/s
	// ÷ the floor's ops/s (higher is better).
	VsFloor float64 `json:"vs_floor"`
	// FloorP50, when set, is the floor's p50 in ms measured interleaved
	// with this operation (between its rounds): VsFloor compares with it
	// when it is lower than the run's first floor, since a shared disk's
	// speed drifts from minute to minute.
	FloorP50 float64 `json:"floor_p50_ms,omitempty"`
	Note     string  `json:"note,omitempty"`
}

// Report is what Run measured.
type Report struct {
	Dir   string `json:"dir"`
	FS    FSInfo `json:"filesystem"`
	Quick bool   `json:"quick"`
	// Python is the python3 that ran the Python agents, "" if none did.
	Python  string   `json:"python,omitempty"`
	Floor   Result   `json:"floor"`
	Results []Result `json:"results"`
	// Idle is the daemon process serving IdleTasks tasks, measured once it
	// is ready: CPU used over IdleSeconds with nothing happening, and RSS.
	IdleTasks   int      `json:"idle_tasks"`
	IdleSeconds float64  `json:"idle_seconds"`
	IdleCPUms   float64  `json:"idle_cpu_ms"`
	RSSMiB      float64  `json:"rss_mib"`
	Notes       []string `json:"notes,omitempty"`
	// Postgres is the same workload on PostgreSQL, when Options.Postgres
	// named a database.
	Postgres *PGReport `json:"postgres,omitempty"`
	// SQLite is the same workload on SQLite, when Options.SQLite asked.
	SQLite *SQLiteReport `json:"sqlite,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the q-th percentile (0 < q < 100) of sorted latencies by
// the nearest-rank method: the smallest value with at least q% of the
// values at or below it. It is 0 for no values.
func percentile(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*q + 99) / 100 // ceil(n·q/100), 1-based
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// summarize sorts lat and turns it into a Result: count, p50, p99, and the
// rate over wall (0 when wall is not positive).
func summarize(name string, lat []time.Duration, wall time.Duration) Result {
	slices.Sort(lat)
	r := Result{Name: name, Ops: len(lat)}
	if len(lat) == 0 {
		return r
	}
	r.P50 = ms(percentile(lat, 50))
	r.P99 = ms(percentile(lat, 99))
	if wall > 0 {
		r.OpsPS = float64(len(lat)) / wall.Seconds()
	}
	return r
}

// Kinds of comparison with the floor (Result.VsFloor).
const (
	// latencyRatio: p50 ÷ the floor's p50 (lower is better).
	latencyRatio = iota
	// rateRatio: ops/s ÷ the floor's ops/s at its p50, that is what one
	// durable write per operation would allow (higher is better).
	rateRatio
)

// vsFloor compares r with the floor measured in the same run. It is 0
// when the floor or r has nothing to compare.
func vsFloor(r, floor Result, kind int) float64 {
	if floor.P50 <= 0 {
		return 0
	}
	if kind == rateRatio {
		return r.OpsPS / (1000 / floor.P50)
	}
	return r.P50 / floor.P50
}

// interrupted replaces *err with the context's error once ctx is done:
// an interrupt makes agents and the daemon exit, and what the harness
// then sees of them is not the cause.
func interrupted(ctx context.Context, err *error) {
	if *err != nil && ctx.Err() != nil {
		*err = fmt.Errorf("bench: interrupted: %w", ctx.Err())
	}
}

func (o Options) say(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Run runs the whole workload and returns the report.
func Run(ctx context.Context, opt Options) (rep *Report, err error) {
	defer interrupted(ctx, &err)
	base, err := os.MkdirTemp(opt.Dir, ".workspaced-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	defer os.RemoveAll(base)
	rep = &Report{Dir: base, FS: describeFS(base), Quick: opt.Quick}
	if opt.NoFiles {
		rep.Notes = append(rep.Notes, "files: left out (--no-files); the database's rows only")
	} else if err := runFiles(ctx, opt, base, rep); err != nil {
		return nil, err
	}
	if opt.Postgres != "" {
		if rep.Postgres, err = RunPostgres(ctx, opt); err != nil {
			return nil, err
		}
	}
	if opt.SQLite {
		if rep.SQLite, err = RunSQLite(ctx, opt); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// measureFloor times atomicfile.WriteFile of 1 KiB: temporary file,
// write, fsync, rename, directory fsync.
func measureFloor(base string, n int) (Result, error) {
	dir := filepath.Join(base, "floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	data := make([]byte, 1024)
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := atomicfile.WriteFile(root, "f"+strconv.Itoa(i%8), data, 0o644); err != nil {
			return Result{}, err
		}
		lat = append(lat, time.Since(t))
	}
	r := summarize("floor: temp write + fsync + rename + dir fsync (1 KiB)", lat, time.Since(start))
	r.VsFloor = 1
	return r, nil
}

func measureEnv(ctx context.Context, dir string, n int) ([]Result, error) {
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	if _, err := ws.CreateTask(ctx, workspace.NewTaskRequest{ID: "bench", Description: "env benchmark"}); err != nil {
		return nil, err
	}
	scope := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "bench"}
	var out []Result
	for _, size := range []int{1 << 10, 100 << 10} {
		label := fmt.Sprintf("%d KiB", size>>10)
		value, _ := json.Marshal(strings.Repeat("x", size-2))
		time1 := func(name string, f func(i int) error) error {
			lat := make([]time.Duration, 0, n)
			start := time.Now()
			for i := 0; i < n; i++ {
				t := time.Now()
				if err := f(i); err != nil {
					return fmt.Errorf("bench %s: %w", name, err)
				}
				lat = append(lat, time.Since(t))
			}
			out = append(out, summarize(name, lat, time.Since(start)))
			return nil
		}
		key := func(i int) string { return fmt.Sprintf("k%d_%d", size, i) }
		if err := time1("env store "+label, func(i int) error {
			_, err := ws.StoreEntry(ctx, scope, workspace.StoreRequest{Key: key(i), Description: "bench", Value: value, Agent: "bench"})
			return err
		}); err != nil {
			return nil, err
		}
		if err := time1("env get "+label, func(i int) error { _, err := ws.GetEntry(ctx, scope, key(i)); return err }); err != nil {
			return nil, err
		}
		if err := time1("env update "+label, func(i int) error {
			_, err := ws.UpdateEntry(ctx, scope, workspace.UpdateRequest{Key: key(i), Value: value, Agent: "bench"})
			return err
		}); err != nil {
			return nil, err
		}
		if err := time1(fmt.Sprintf("env list %s (%d keys)", label, n), func(int) error { _, err := ws.ListEntries(ctx, scope); return err }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sampler measures a floor between the daemon's rounds: k writes, each
// as durable as the backend's, and their latencies.
type sampler interface {
	sample(k int) ([]time.Duration, error)
}

// floorer measures the floor between the daemon's rounds: one durable
// 1 KiB write at a time, in a directory of its own on the same
// filesystem.
type floorer struct {
	root *os.Root
	data []byte
	n    int
}

func newFloorer(dir string) (*floorer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &floorer{root: root, data: make([]byte, 1024)}, nil
}

// sample makes k durable writes and returns their latencies.
func (f *floorer) sample(k int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, k)
	for range k {
		t := time.Now()
		f.n++
		if err := atomicfile.WriteFile(f.root, "f"+strconv.Itoa(f.n%8), f.data, 0o644); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

func (f *floorer) close() { f.root.Close() }

// floorP50 is the p50 in ms of floor samples.
func floorP50(lat []time.Duration) float64 {
	slices.Sort(lat)
	return ms(percentile(lat, 50))
}

// measureIdle builds a tree of n finished and active tasks, starts a real
// `workspaced serve` on it, waits until it is ready, and measures its CPU
// time over window and its RSS.
// It fails with errNoProc, at once, where there is no /proc to read them
// from (macOS, FreeBSD).
func measureIdle(ctx context.Context, dir string, n int, window time.Duration, opt Options) (cpuMS, rssMiB float64, err error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return 0, 0, errNoProc
	}
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer ws.Close()
	now := time.Now().UTC()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("task_%05d", i)
		td := filepath.Join(dir, "tasks", id)
		if err := os.MkdirAll(td, 0o755); err != nil {
			return 0, 0, err
		}
		task, _ := atomicfile.Marshal(workspace.Task{ID: id, CreatedAt: now, Description: "idle benchmark task"})
		st := workspace.State{TaskID: id, PlanStatus: "none", Status: "planning", Phase: "planning", LastUpdated: now,
			Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
			Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
		if i%2 == 0 {
			done := now
			st.Status, st.Phase, st.CompletedAt = "completed", "completed", &done
		}
		state, _ := atomicfile.Marshal(st)
		// A scratch tree: plain writes, no fsync needed.
		if err := os.WriteFile(filepath.Join(td, "task.json"), task, 0o644); err != nil {
			return 0, 0, err
		}
		if err := os.WriteFile(filepath.Join(td, "state.json"), state, 0o644); err != nil {
			return 0, 0, err
		}
	}
	srv, err := startServer(ctx, opt.ServeCmd, dir, nil)
	if err != nil {
		return 0, 0, err
	}
	defer srv.close()
	if err := srv.waitReady(time.Minute); err != nil {
		return 0, 0, err
	}
	pid := srv.pid()
	// Let the start-up work (the first settle) finish before measuring.
	time.Sleep(daemon.DefaultSettle + 200*time.Millisecond)
	c0, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(window) // the measurement window itself
	c1, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	rss, err := procRSS(pid)
	if err != nil {
		return 0, 0, err
	}
	return ms(c1 - c0), float64(rss) / (1 << 20), nil
}

// errNoProc: the system has no /proc (Linux's) to read a process's CPU
// time and resident set from.
var errNoProc = errors.New("they are read from /proc, which this system does not have")

// procCPU is the user+system CPU time of a process, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := parseStatCPU(string(data))
	if err != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// parseStatCPU reads utime + stime from the text of /proc/<pid>/stat. The
// command name (in parentheses) may hold spaces and parentheses itself, so
// the fields are counted from the last ')'.
func parseStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	ut, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	st, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, nil
}

// procRSS is the resident set of a process in bytes.
func procRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	n, err := parseStatusRSS(string(data))
	if err != nil {
		return 0, fmt.Errorf("bench: /proc/%d/status: %w", pid, err)
	}
	return n, nil
}

// parseStatusRSS reads VmRSS, in bytes, from the text of /proc/<pid>/status.
func parseStatusRSS(s string) (int64, error) {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// judgeDaemonRows sets each daemon row's ratio to the floor and says how
// it was made: a latency against the floor's p50, a rate against perMarker
// ("one durable write", "one commit") per marker at that p50. Each row
// is judged against the lower of the run's floor and the one sampled
// between its rounds: the daemon's own background work (making records
// durable) may slow the samples between rounds, and that must not
// flatter it.
func judgeDaemonRows(dres []daemonRow, floor Result, perMarker string) []Result {
	out := make([]Result, 0, len(dres))
	for _, dr := range dres {
		r := dr.Result
		local := floor
		if r.FloorP50 > 0 && r.FloorP50 < floor.P50 {
			local = Result{P50: r.FloorP50}
		}
		if dr.kind == rowSingle {
			r.VsFloor = vsFloor(r, local, latencyRatio)
			r.Note = fmt.Sprintf("p50 ÷ floor p50 %.2f ms", local.P50)
		} else {
			r.VsFloor = vsFloor(r, local, rateRatio)
			r.Note = fmt.Sprintf("markers/s ÷ %s per marker at floor p50 %.2f ms", perMarker, local.P50)
		}
		if dr.target != "" {
			r.Note += " (" + dr.target + ")"
		}
		out = append(out, r)
	}
	return out
}
