// Package bench is the workload behind `workspaced bench`: it measures the
// workspace's operations and the daemon on a temporary workspace in the
// same filesystem as the real root, each beside the disk's own floor (a
// temporary write, fsync, rename and directory fsync) measured in the same
// run, so the figures say how close to the hardware the code gets.
//
// The daemon runs in-process; its agents are separate processes (the
// binary re-executed in agent mode, see AgentMain) that drop done markers
// exactly as agents in any language would (on Linux through raw system
// calls, so that Go's runtime adds no work an agent in another language
// would not have; see quietStdin). A marker's latency runs from
// the moment its agent's atomic write returned to the state write that
// reflects it (a hook on the daemon).
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// Options configure Run.
type Options struct {
	// Dir is where the temporary workspaces go (a fresh directory inside
	// it, removed afterwards). It should be on the root's filesystem.
	Dir string
	// Quick runs fewer iterations and a smaller tree (seconds, not minutes).
	Quick bool
	// AgentCmd is the command that starts one agent process (the binary
	// and its agent-mode arguments); AgentMain runs on the other side.
	AgentCmd []string
	// ServeCmd starts `workspaced serve` for a root given as the last
	// argument's value (the binary and "--root"); used for idle and RSS.
	ServeCmd []string
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
	Dir     string   `json:"dir"`
	Quick   bool     `json:"quick"`
	Floor   Result   `json:"floor"`
	Results []Result `json:"results"`
	// Idle is the daemon process serving IdleTasks tasks, measured once it
	// is ready: CPU used over IdleSeconds with nothing happening, and RSS.
	IdleTasks   int      `json:"idle_tasks"`
	IdleSeconds float64  `json:"idle_seconds"`
	IdleCPUms   float64  `json:"idle_cpu_ms"`
	RSSMiB      float64  `json:"rss_mib"`
	Notes       []string `json:"notes,omitempty"`
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

func (o Options) say(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Run runs the whole workload and returns the report.
func Run(ctx context.Context, opt Options) (*Report, error) {
	base, err := os.MkdirTemp(opt.Dir, ".workspaced-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	defer os.RemoveAll(base)
	rep := &Report{Dir: base, Quick: opt.Quick}
	n := 200
	if opt.Quick {
		n = 40
	}

	opt.say("floor: durable write of 1 KiB ×%d", n)
	floor, err := measureFloor(base, n)
	if err != nil {
		return nil, err
	}
	rep.Floor = floor

	opt.say("env store/get/update/list")
	envRes, err := measureEnv(ctx, filepath.Join(base, "env"), n)
	if err != nil {
		return nil, err
	}
	for _, r := range envRes {
		r.VsFloor = vsFloor(r, floor, latencyRatio)
		rep.Results = append(rep.Results, r)
	}

	opt.say("daemon: markers from 1, 8 and 32 agent processes")
	fl, err := newFloorer(filepath.Join(base, "floor-daemon"))
	if err != nil {
		return nil, err
	}
	defer fl.close()
	dres, err := measureDaemon(ctx, filepath.Join(base, "daemon"), opt, fl)
	if err != nil {
		return nil, err
	}
	for _, r := range dres {
		// The lower of the two floors: the daemon's own background work
		// (making records durable) may slow the samples between rounds,
		// and that must not flatter it.
		local := floor
		if r.FloorP50 > 0 && r.FloorP50 < floor.P50 {
			local = Result{P50: r.FloorP50}
		}
		if strings.HasPrefix(r.Name, "daemon 1 agent") {
			r.VsFloor = vsFloor(r, local, latencyRatio)
			r.Note = fmt.Sprintf("p50 ÷ floor p50 %.2f ms (target ≤ 3)", local.P50)
		} else {
			r.VsFloor = vsFloor(r, local, rateRatio)
			r.Note = fmt.Sprintf("markers/s ÷ one durable write per marker at floor p50 %.2f ms", local.P50)
			if strings.HasPrefix(r.Name, "daemon 32 agents at once") {
				r.Note += " (target ≥ 5, p99 < 50 ms)"
			}
		}
		rep.Results = append(rep.Results, r)
	}

	tasks, secs := 10000, 5.0
	if opt.Quick {
		tasks, secs = 1000, 2
		rep.Notes = append(rep.Notes, "quick: idle and RSS measured with 1,000 tasks, not 10,000")
	}
	opt.say("daemon idle with %d tasks", tasks)
	cpu, rss, err := measureIdle(ctx, filepath.Join(base, "idle"), tasks, time.Duration(secs*float64(time.Second)), opt)
	if err != nil {
		return nil, err
	}
	rep.IdleTasks, rep.IdleSeconds, rep.IdleCPUms, rep.RSSMiB = tasks, secs, cpu, rss
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
	ws, err := workspace.Init(dir, workspace.Options{})
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

// commits records, per task and subtask, when the daemon's state write
// first showed the subtask completed.
type commits struct {
	mu   sync.Mutex
	seen map[string]time.Time // task/subtask
	cond *sync.Cond
	err  error // set by abort: wait returns it
}

func newCommits() *commits {
	c := &commits{seen: map[string]time.Time{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *commits) hook(task string, st workspace.State) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range st.Subtasks {
		k := task + "/" + id
		if s.Status == "completed" {
			if _, ok := c.seen[k]; !ok {
				c.seen[k] = now
			}
		}
	}
	if st.Status == "executing" {
		if _, ok := c.seen[task+"/"]; !ok {
			c.seen[task+"/"] = now
		}
	}
	c.cond.Broadcast()
}

// abort makes wait return err from now on (an agent exited early: what
// it was to drop will never be applied).
func (c *commits) abort(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.cond.Broadcast()
}

// wait blocks until every key is seen or the deadline passes.
func (c *commits) wait(keys []string, deadline time.Time) error {
	timer := time.AfterFunc(time.Until(deadline), func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.err != nil {
			return c.err
		}
		missing := ""
		for _, k := range keys {
			if _, ok := c.seen[k]; !ok {
				missing = k
				break
			}
		}
		if missing == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s not applied by the daemon in time", missing)
		}
		c.cond.Wait()
	}
}

func (c *commits) at(k string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[k]
}

// agent is one agent process.
type agent struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	lines   chan string
	closing atomic.Bool
}

// startAgent starts an agent process; if it exits before close, cm's
// waits fail at once rather than at their deadline.
func startAgent(opt Options, cm *commits, root, task, name string) (*agent, error) {
	args := append(append([]string{}, opt.AgentCmd[1:]...), "--agent-root", root, "--agent-task", task, "--agent-name", name)
	cmd := exec.Command(opt.AgentCmd[0], args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start agent: %w", err)
	}
	a := &agent{cmd: cmd, in: in, out: bufio.NewScanner(outp), lines: make(chan string, 1024)}
	go func() {
		for a.out.Scan() {
			a.lines <- a.out.Text()
		}
		close(a.lines)
		if !a.closing.Load() {
			cm.abort(fmt.Errorf("bench: agent process %s exited early (what it said is above, on stderr)", name))
		}
	}()
	if line, ok := <-a.lines; !ok || line != "ready" {
		return nil, fmt.Errorf("bench: agent did not start (said %q)", line)
	}
	return a, nil
}

// stamp reads one "<subtask> <unixnano>" line.
func (a *agent) stamp() (string, time.Time, error) {
	line, ok := <-a.lines
	if !ok {
		return "", time.Time{}, fmt.Errorf("bench: agent exited early")
	}
	sub, ns, _ := strings.Cut(line, " ")
	v, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("bench: agent said %q", line)
	}
	return sub, time.Unix(0, v), nil
}

// report asks the agent for the stamps of the markers it dropped since it
// was last asked, and reads them.
func (a *agent) report(n int) ([]string, []time.Time, error) {
	if _, err := io.WriteString(a.in, "report\n"); err != nil {
		return nil, nil, err
	}
	subs, ts := make([]string, 0, n), make([]time.Time, 0, n)
	for range n {
		sub, t0, err := a.stamp()
		if err != nil {
			return nil, nil, err
		}
		subs, ts = append(subs, sub), append(ts, t0)
	}
	return subs, ts, nil
}

func (a *agent) close() {
	a.closing.Store(true)
	a.in.Close()
	_ = a.cmd.Wait()
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

// measureDaemon runs the daemon workloads; fl measures the floor between
// their rounds, and each Result carries that floor's p50.
func measureDaemon(ctx context.Context, dir string, opt Options, fl *floorer) ([]Result, error) {
	ws, err := workspace.Init(dir, workspace.Options{})
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	cm := newCommits()
	ready := make(chan struct{})
	d, err := daemon.New(daemon.Config{Root: dir, CleanupInterval: -1, OnCommit: cm.hook, Ready: func() { close(ready) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-ready:
	case err := <-done:
		return nil, err
	}

	prepare := func(task string, n int) error {
		if err := daemon.PrepareTask(ctx, ws, task, n); err != nil {
			return err
		}
		// Wait for the proposal before approving, as a reviewer would.
		deadline := time.Now().Add(time.Minute)
		for {
			st, err := ws.ReadState(task)
			if err == nil && st.PlanStatus == "proposed" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: plan of %s not proposed", task)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := daemon.ApprovePlan(ws, task); err != nil {
			return err
		}
		if err := cm.wait([]string{task + "/"}, time.Now().Add(time.Minute)); err != nil {
			return err
		}
		for i := 1; i <= n; i++ {
			if _, err := ws.WriteOutput(task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
				return err
			}
		}
		return nil
	}

	var out []Result
	// One agent, one marker at a time.
	single := 100
	if opt.Quick {
		single = 25
	}
	if err := prepare("single", single); err != nil {
		return nil, err
	}
	a, err := startAgent(opt, cm, dir, "single", "agent_1")
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, single)
	var floors []time.Duration
	start := time.Now()
	for i := 1; i <= single; i++ {
		sub := fmt.Sprintf("st_%d", i)
		fmt.Fprintln(a.in, "now "+sub)
		if err := cm.wait([]string{"single/" + sub}, time.Now().Add(time.Minute)); err != nil {
			return nil, err
		}
		_, renamed, err := a.report(1)
		if err != nil {
			return nil, err
		}
		lat = append(lat, cm.at("single/"+sub).Sub(renamed[0]))
		// The floor between markers, off the clock of the rate.
		tf := time.Now()
		fls, err := fl.sample(1)
		if err != nil {
			return nil, err
		}
		floors = append(floors, fls...)
		start = start.Add(time.Since(tf))
	}
	wall := time.Since(start)
	a.close()
	r := summarize("daemon 1 agent, one marker at a time: marker → state", lat, wall)
	r.FloorP50 = floorP50(floors)
	out = append(out, r)

	// Bursts. "At once": every agent finishes one subtask at the same
	// moment, round after round (a round is committed before the next
	// starts); "back to back": every agent drops all its markers in one go.
	rounds := 8
	if opt.Quick {
		rounds = 3
	}
	for _, b := range []struct {
		agents, rounds, per int
	}{{8, rounds, 1}, {32, rounds, 1}, {32, 1, rounds}} {
		task := fmt.Sprintf("burst%d_%d", b.agents, b.per)
		if err := prepare(task, b.agents*b.rounds*b.per); err != nil {
			return nil, err
		}
		as := make([]*agent, b.agents)
		for i := range as {
			if as[i], err = startAgent(opt, cm, dir, task, fmt.Sprintf("agent_%d", i+1)); err != nil {
				return nil, err
			}
		}
		var (
			lat, floors []time.Duration
			wall        time.Duration
		)
		next := 1
		for r := 0; r < b.rounds; r++ {
			subs := make([][]string, b.agents)
			for k := 0; k < b.per; k++ {
				for i := range subs {
					subs[i] = append(subs[i], fmt.Sprintf("st_%d", next))
					next++
				}
			}
			l, w, err := burst(cm, task, as, subs)
			if err != nil {
				return nil, err
			}
			lat, wall = append(lat, l...), wall+w
			// At least 32 floor samples a row, so that a row of one
			// round is not judged against a p50 of four.
			fls, err := fl.sample(max(4, 32/b.rounds))
			if err != nil {
				return nil, err
			}
			floors = append(floors, fls...)
		}
		for _, ag := range as {
			ag.close()
		}
		name := fmt.Sprintf("daemon %d agents at once, %d rounds", b.agents, b.rounds)
		if b.per > 1 {
			name = fmt.Sprintf("daemon %d agents × %d markers back to back", b.agents, b.per)
		}
		r := summarize(name, lat, wall)
		r.FloorP50 = floorP50(floors)
		out = append(out, r)
	}
	return out, nil
}

// burst has every agent of as prepare its subtasks of subs (agent i drops
// subs[i], in order), waits until all are prepared, then lets them all go
// at once. It returns each marker's latency (its rename → the state write
// reflecting it) and the burst's span (first rename → last such write).
func burst(cm *commits, task string, as []*agent, subs [][]string) ([]time.Duration, time.Duration, error) {
	for i, ag := range as {
		var b strings.Builder
		for _, sub := range subs[i] {
			b.WriteString(sub + "\n")
		}
		if _, err := io.WriteString(ag.in, b.String()); err != nil {
			return nil, 0, err
		}
	}
	// Every agent holds its markers, prepared ("sync" answers when); then
	// all go together.
	for _, ag := range as {
		if _, err := io.WriteString(ag.in, "sync\n"); err != nil {
			return nil, 0, err
		}
		if line, ok := <-ag.lines; !ok || line != "prepared" {
			return nil, 0, fmt.Errorf("bench: agent did not prepare (said %q)", line)
		}
	}
	for _, ag := range as {
		if _, err := io.WriteString(ag.in, "go\n"); err != nil {
			return nil, 0, err
		}
	}
	// The agents keep their stamps until asked, after the round: reading
	// them is the harness's work, kept out of the time measured.
	var keys []string
	for i := range as {
		for _, sub := range subs[i] {
			keys = append(keys, task+"/"+sub)
		}
	}
	if err := cm.wait(keys, time.Now().Add(2*time.Minute)); err != nil {
		return nil, 0, err
	}
	stamps := map[string]time.Time{}
	var first time.Time
	for i, ag := range as {
		got, ts, err := ag.report(len(subs[i]))
		if err != nil {
			return nil, 0, err
		}
		for j, sub := range got {
			stamps[sub] = ts[j]
			if first.IsZero() || ts[j].Before(first) {
				first = ts[j]
			}
		}
	}
	if len(stamps) != len(keys) {
		return nil, 0, fmt.Errorf("bench: %d stamps for %d markers", len(stamps), len(keys))
	}
	var last time.Time
	lat := make([]time.Duration, 0, len(stamps))
	for sub, t0 := range stamps {
		at := cm.at(task + "/" + sub)
		lat = append(lat, at.Sub(t0))
		if at.After(last) {
			last = at
		}
	}
	return lat, last.Sub(first), nil
}

// AgentMain is the agent process. It drops done markers the way the
// protocol lets an agent in any language do it (SPEC §4): the marker is
// written to a temporary dot-file and fsynced first, then renamed into the
// task directory, and the directory is fsynced. It prints "ready" once the
// workspace is open, then reads commands from stdin, one a line: "now
// <subtask>" prepares and drops that marker; "<subtask>" prepares it and
// holds it; "sync" answers "prepared"; "go" drops every held marker back
// to back; "report" prints, for each marker dropped since the last
// report, "<subtask> <unix nanoseconds of the rename>". The stamps wait
// for "report" so that the harness reads them after a round, not during
// it. On Linux the drop and the reading of commands keep clear of the Go
// runtime's system call bookkeeping (see quietStdin), as an agent in
// another language would have none.
func AgentMain(root, task, name string, in io.Reader, out io.Writer) error {
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		return err
	}
	defer ws.Close()
	dir := filepath.Join(ws.Dir(), "tasks", task)
	bw := bufio.NewWriter(out)
	fmt.Fprintln(bw, "ready")
	if err := bw.Flush(); err != nil {
		return err
	}
	prepare := func(sub string) (string, error) {
		now := time.Now().UTC()
		m := workspace.Marker{AgentID: name, SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed", CompletedAt: &now}
		data, err := atomicfile.Marshal(m)
		if err != nil {
			return "", err
		}
		tmp := ".tmp-" + name + "-" + sub
		f, err := os.OpenFile(filepath.Join(dir, tmp), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return "", err
		}
		return tmp, f.Close()
	}
	var stamps []byte
	drop := func(sub, tmp string) error {
		t0 := time.Now()
		if err := dropMarker(dir, tmp, workspace.DonePrefix+name+"."+sub); err != nil {
			return err
		}
		// Kept until "report": the harness reads it after the round.
		stamps = fmt.Appendf(stamps, "%s %d\n", sub, t0.UnixNano())
		return nil
	}
	sc := bufio.NewScanner(quietStdin(in))
	type heldMarker struct{ sub, tmp string }
	var held []heldMarker
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case line == "sync":
			fmt.Fprintln(bw, "prepared")
			if err := bw.Flush(); err != nil {
				return err
			}
		case line == "report":
			bw.Write(stamps)
			stamps = stamps[:0]
			if err := bw.Flush(); err != nil {
				return err
			}
		case line == "go":
			for _, h := range held {
				if err := drop(h.sub, h.tmp); err != nil {
					return err
				}
			}
			held = nil
		case strings.HasPrefix(line, "now "):
			sub := strings.TrimPrefix(line, "now ")
			tmp, err := prepare(sub)
			if err != nil {
				return err
			}
			if err := drop(sub, tmp); err != nil {
				return err
			}
		default:
			tmp, err := prepare(line)
			if err != nil {
				return err
			}
			held = append(held, heldMarker{line, tmp})
		}
	}
	return sc.Err()
}

// measureIdle builds a tree of n finished and active tasks, starts a real
// `workspaced serve` on it, waits until it is ready, and measures its CPU
// time over window and its RSS.
func measureIdle(ctx context.Context, dir string, n int, window time.Duration, opt Options) (cpuMS, rssMiB float64, err error) {
	ws, err := workspace.Init(dir, workspace.Options{})
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
	args := append(append([]string{}, opt.ServeCmd[1:]...), dir, "serve", "--log-format", "text")
	cmd := exec.CommandContext(ctx, opt.ServeCmd[0], args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	readyAt := time.Time{}
	for sc.Scan() {
		if strings.Contains(sc.Text(), "msg=ready") {
			readyAt = time.Now()
			break
		}
	}
	if readyAt.IsZero() {
		return 0, 0, fmt.Errorf("bench: the daemon did not get ready")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	pid := cmd.Process.Pid
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
