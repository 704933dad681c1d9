package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// rig is one workspace served by a daemon process, with a watcher of its
// state writes: everything the harness knows of the daemon, it learns as
// an agent would, from the files.
type rig struct {
	dir string // the workspace's root: a directory, or a postgres:// URL
	st  workspace.Store
	ws  *files.Store // set when the workspace is a directory
	cm  *commits
	sw  *stateWatcher
	srv *server
	pg  *pgRig // set when the workspace is in PostgreSQL (postgres.go)
	sq  *sqRig // set when it is in SQLite (sqlite.go)
}

// newRig makes a workspace in dir and starts serveCmd on it.
func newRig(ctx context.Context, dir string, serveCmd []string, serveArgs ...string) (*rig, error) {
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		return nil, err
	}
	r := &rig{dir: dir, st: ws, ws: ws, cm: newCommits()}
	if r.sw, err = newStateWatcher(dir, r.cm); err != nil {
		ws.Close()
		return nil, err
	}
	// Retention off, as nothing here is to be pruned mid-run.
	if r.srv, err = startServer(ctx, serveCmd, dir, r.cm.abort, append([]string{"--cleanup-interval", "0"}, serveArgs...)...); err != nil {
		r.sw.close()
		ws.Close()
		return nil, err
	}
	return r, nil
}

func (r *rig) close() {
	r.srv.close()
	if r.pg != nil {
		r.pg.close()
		return
	}
	if r.sq != nil {
		r.sq.closeAll()
		return
	}
	r.sw.close()
	r.ws.Close()
}

// prepare makes task with n subtasks ready for its agents: the plan
// proposed by a coordinator, approved by a reviewer once the daemon shows
// it proposed, and every subtask's output written (a done marker names
// it), with the task's directory watched throughout.
func (r *rig) prepare(ctx context.Context, task string, n int) error {
	return r.prepareOutputs(ctx, task, n, n)
}

// prepareOutputs is prepare with the outputs of only the first outputs
// subtasks written.
func (r *rig) prepareOutputs(ctx context.Context, task string, n, outputs int) error {
	if err := fixture.PrepareTask(ctx, r.st, task, n); err != nil {
		return err
	}
	if r.sw != nil {
		if err := r.sw.watch(task); err != nil {
			return err
		}
	}
	if err := r.cm.waitState(task, "plan proposed", func(v taskView) bool { return v.PlanStatus == "proposed" }, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	if err := fixture.ApprovePlan(ctx, r.st, task); err != nil {
		return err
	}
	if err := r.cm.waitState(task, "executing", func(v taskView) bool { return v.Status == "executing" }, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	for i := 1; i <= min(n, outputs); i++ {
		if _, err := r.st.WriteOutput(ctx, task, fmt.Sprintf("st_%d", i), "bench", []byte(`{"summary":"ok"}`)); err != nil {
			return err
		}
	}
	return nil
}

// agentKind says how to start one kind of agent process.
type agentKind struct {
	// what a row calls one agent of this kind ("agent", "python agent").
	one, many string
	argv      func(root, task, name string) []string
}

func goAgents(opt Options) agentKind {
	return agentKind{one: "agent", many: "agents", argv: func(root, task, name string) []string {
		return append(append([]string{}, opt.AgentCmd...), "--agent-root", root, "--agent-task", task, "--agent-name", name)
	}}
}

func pythonAgents(python, driver string) agentKind {
	return agentKind{one: "python agent", many: "python agents", argv: func(root, task, name string) []string {
		return []string{python, driver, root, task, name}
	}}
}

// startAgents starts n agents of kind on task, named agent_1 … agent_n,
// and waits until every one is ready. They start all at once, off the
// clock: one after another, 32 agents' start-ups add up to seconds.
func (r *rig) startAgents(kind agentKind, task string, n int) ([]*agent, error) {
	as := make([]*agent, n)
	for i := range as {
		name := fmt.Sprintf("agent_%d", i+1)
		a, err := spawnAgent(kind.argv(r.dir, task, name), r.cm, name)
		if err != nil {
			closeAll(as)
			return nil, err
		}
		as[i] = a
	}
	for i, a := range as {
		if err := a.ready(); err != nil {
			as[i] = nil // closed by ready
			closeAll(as)
			return nil, err
		}
	}
	return as, nil
}

// Kinds of daemon rows, by what they are judged on.
const (
	rowSingle     = iota // one marker at a time: latency
	rowAtOnce            // agents finishing at once: rate
	rowBackToBack        // agents dropping several markers each: rate
)

// daemonRow is a daemon Result and how to judge it.
type daemonRow struct {
	Result
	kind   int
	target string // the goal named in the note, or ""
}

// measureDaemon runs the daemon workloads with agents of each kind (Go
// first, then Python when python is set); fl measures the floor between
// their rounds, and each row carries that floor's p50.
func measureDaemon(ctx context.Context, dir string, opt Options, fl *floorer, python string) ([]daemonRow, error) {
	r, err := newRig(ctx, dir, opt.ServeCmd)
	if err != nil {
		return nil, err
	}
	defer r.close()
	single, rounds := 100, 8
	if opt.Quick {
		single, rounds = 25, 3
	}
	goKind := goAgents(opt)
	var out []daemonRow
	row, err := r.single(ctx, goKind, "single", single, fl)
	if err != nil {
		return nil, err
	}
	out = append(out, daemonRow{row, rowSingle, "target ≤ 3"})
	for _, b := range []struct {
		agents, rounds, per int
		target              string
	}{{8, rounds, 1, ""}, {32, rounds, 1, "target ≥ 4, p99 < 50 ms"}, {32, 1, rounds, ""}} {
		row, err := r.bursts(ctx, goKind, b.agents, b.rounds, b.per, fl)
		if err != nil {
			return nil, err
		}
		kind := rowAtOnce
		if b.per > 1 {
			kind = rowBackToBack
		}
		out = append(out, daemonRow{row, kind, b.target})
	}
	if python == "" {
		return out, nil
	}
	opt.say("daemon: markers from 1 and 32 Python agent processes")
	driver, err := writePythonAgent(filepath.Join(filepath.Dir(dir), "python"))
	if err != nil {
		return nil, err
	}
	pyKind := pythonAgents(python, driver)
	if row, err = r.single(ctx, pyKind, "py_single", single, fl); err != nil {
		return nil, err
	}
	out = append(out, daemonRow{row, rowSingle, ""})
	if row, err = r.bursts(ctx, pyKind, 32, rounds, 1, fl); err != nil {
		return nil, err
	}
	return append(out, daemonRow{row, rowAtOnce, ""}), nil
}

// single has one agent drop n markers, one at a time, each once the state
// showed the one before; a floor sample follows each, off the clock.
func (r *rig) single(ctx context.Context, kind agentKind, task string, n int, fl sampler) (Result, error) {
	if err := r.prepare(ctx, task, n); err != nil {
		return Result{}, err
	}
	as, err := r.startAgents(kind, task, 1)
	if err != nil {
		return Result{}, err
	}
	defer closeAll(as)
	a := as[0]
	lat := make([]time.Duration, 0, n)
	var (
		wall   time.Duration
		floors []time.Duration
	)
	for i := 1; i <= n; i++ {
		d, w, err := r.one(a, task, fmt.Sprintf("st_%d", i))
		if err != nil {
			return Result{}, err
		}
		lat, wall = append(lat, d), wall+w
		fls, err := fl.sample(1)
		if err != nil {
			return Result{}, err
		}
		floors = append(floors, fls...)
	}
	res := summarize(fmt.Sprintf("daemon 1 %s, one marker at a time: marker → state", kind.one), lat, wall)
	res.FloorP50 = floorP50(floors)
	return res, nil
}

// one has agent a drop task's marker for sub at once and waits for the
// state showing it: the marker's latency (its rename → the first read of
// a state showing it completed) and the wait (the command → that read).
func (r *rig) one(a *agent, task, sub string) (lat, wait time.Duration, err error) {
	t := time.Now()
	if _, err := io.WriteString(a.in, "now "+sub+"\n"); err != nil {
		return 0, 0, err
	}
	key := task + "/" + sub
	if err := r.cm.wait([]string{key}, time.Now().Add(time.Minute)); err != nil {
		return 0, 0, err
	}
	wait = time.Since(t)
	_, renamed, err := a.report(1)
	if err != nil {
		return 0, 0, err
	}
	return r.cm.at(key).Sub(renamed[0]), wait, nil
}

// bursts runs rounds in which each of n agents drops per markers at the
// same moment (a round is seen whole before the next starts), with floor
// samples between rounds.
func (r *rig) bursts(ctx context.Context, kind agentKind, n, rounds, per int, fl sampler) (Result, error) {
	task := fmt.Sprintf("burst%d_%d", n, per)
	if strings.HasPrefix(kind.one, "python") {
		task = "py_" + task
	}
	if err := r.prepare(ctx, task, n*rounds*per); err != nil {
		return Result{}, err
	}
	as, err := r.startAgents(kind, task, n)
	if err != nil {
		return Result{}, err
	}
	defer closeAll(as)
	var (
		lat, floors []time.Duration
		wall        time.Duration
	)
	next := 1
	for range rounds {
		subs := make([][]string, n)
		for range per {
			for i := range subs {
				subs[i] = append(subs[i], fmt.Sprintf("st_%d", next))
				next++
			}
		}
		l, w, err := burst(r.cm, task, as, subs)
		if err != nil {
			return Result{}, err
		}
		lat, wall = append(lat, l...), wall+w
		// At least 32 floor samples a row, so that a row of one round is
		// not judged against a p50 of four.
		fls, err := fl.sample(max(4, 32/rounds))
		if err != nil {
			return Result{}, err
		}
		floors = append(floors, fls...)
	}
	name := fmt.Sprintf("daemon %d %s at once, %d rounds", n, kind.many, rounds)
	if per > 1 {
		name = fmt.Sprintf("daemon %d %s × %d markers back to back", n, kind.many, per)
	}
	res := summarize(name, lat, wall)
	res.FloorP50 = floorP50(floors)
	return res, nil
}

// burst has every agent of as prepare its subtasks of subs (agent i drops
// subs[i], in order), waits until all are prepared, then lets them all go
// at once. It returns each marker's latency (its rename → the first read
// of state.json showing it completed) and the burst's span (first rename →
// last such read).
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
			return nil, 0, fmt.Errorf("bench: agent %s did not prepare (said %q)", ag.name, line)
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

// measureWatch times what the harness's way of seeing a state write adds
// to every daemon latency: a state.json of about the size of the 32-agent
// task's is renamed into a watched task directory (written and fsynced
// beforehand, off the clock), and the time runs to the watcher's read.
// Each write completes one more subtask of 256, so n is at most 256.
func measureWatch(dir string, n int) (Result, error) {
	td := filepath.Join(dir, "tasks", "w")
	if err := os.MkdirAll(td, 0o755); err != nil {
		return Result{}, err
	}
	cm := newCommits()
	sw, err := newStateWatcher(dir, cm)
	if err != nil {
		return Result{}, err
	}
	defer sw.close()
	if err := sw.watch("w"); err != nil {
		return Result{}, err
	}
	const subs = 256
	n = min(n, subs)
	now := time.Now().UTC()
	st := workspace.State{TaskID: "w", PlanStatus: "approved", Status: "executing", Phase: "executing", LastUpdated: now,
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := 1; i <= subs; i++ {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "pending"}
	}
	lat := make([]time.Duration, 0, n)
	var wall time.Duration
	for i := 1; i <= n; i++ {
		sub := fmt.Sprintf("st_%d", i)
		st.Subtasks[sub] = &workspace.SubtaskState{Status: "completed", Worker: "agent_1", CompletedAt: &now}
		data, err := atomicfile.Marshal(st)
		if err != nil {
			return Result{}, err
		}
		tmp := filepath.Join(td, ".state.json.tmp")
		if err := writeSynced(tmp, data); err != nil {
			return Result{}, err
		}
		t0 := time.Now()
		if err := os.Rename(tmp, filepath.Join(td, "state.json")); err != nil {
			return Result{}, err
		}
		if err := cm.wait([]string{"w/" + sub}, time.Now().Add(time.Minute)); err != nil {
			return Result{}, err
		}
		d := cm.at("w/" + sub).Sub(t0)
		lat, wall = append(lat, d), wall+d
	}
	return summarize("state watcher: state.json renamed → read by the harness", lat, wall), nil
}

// writeSynced writes data to a new file at path and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dbRows runs the daemon rows of a database store on r (its daemon
// started): one agent (noted singleTarget), 32 at once (atOnceTarget)
// followed by alone, the bound of its agents' inserts with no daemon, 32
// back to back, and a drain. Each row's note says in how many commits
// the daemon took its markers, as commits counts them.
func (r *rig) dbRows(ctx context.Context, kind agentKind, single, rounds int, alone Result, fl sampler,
	commits func(ctx context.Context, task string) (markers, commits int, err error), singleTarget, atOnceTarget string) ([]daemonRow, error) {
	add := func(out []daemonRow, row Result, kind int, task, target string) ([]daemonRow, error) {
		markers, n, err := commits(ctx, task)
		if err != nil {
			return nil, err
		}
		note := fmt.Sprintf("%d markers in %d commits", markers, n)
		if target != "" {
			note += "; " + target
		}
		return append(out, daemonRow{row, kind, note}), nil
	}
	row, err := r.single(ctx, kind, "single", single, fl)
	if err != nil {
		return nil, err
	}
	out, err := add(nil, row, rowSingle, "single", singleTarget)
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		agents, rounds, per int
		target              string
	}{{32, rounds, 1, atOnceTarget}, {32, 1, rounds, ""}} {
		row, err := r.bursts(ctx, kind, b.agents, b.rounds, b.per, fl)
		if err != nil {
			return nil, err
		}
		rk := rowAtOnce
		if b.per > 1 {
			rk = rowBackToBack
		}
		if out, err = add(out, row, rk, fmt.Sprintf("burst%d_%d", b.agents, b.per), b.target); err != nil {
			return nil, err
		}
		if b.per == 1 {
			out = append(out, daemonRow{alone, rowAtOnce, "no daemon: the most any daemon can do with the row above's agents"})
		}
	}
	row, err = r.drain(ctx, kind, 32, rounds, r.srv, fl)
	if err != nil {
		return nil, err
	}
	return add(out, row, rowBackToBack, fmt.Sprintf("drain32_%d", rounds), "")
}
