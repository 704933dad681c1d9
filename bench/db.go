package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// dbRig is the database side of a rig, PostgreSQL's (postgres.go) or
// SQLite's (sqlite.go): the workload is the same on both, and only what
// the harness does on the database itself differs.
type dbRig interface {
	rootOf() string
	store() workspace.Store
	// exec runs one of the harness's own statements ($1 placeholders).
	exec(ctx context.Context, query string, args ...any) error
	// watch feeds cm every state the daemon writes, until the rig closes.
	watch(ctx context.Context, cm *commits) error
	// inserted readies the harness to learn when task's markers are
	// inserted: wait returns once n are, with the moment it knew.
	inserted(ctx context.Context, task string) (wait func(n int) (time.Time, error), stop func(), err error)
	// commits counts the agents' markers the daemon journaled for task
	// and the commits it took them in.
	commits(ctx context.Context, task string) (markers, commits int, err error)
}

// runDB measures the database's floor with fl, then the env rows and the
// daemon rows on db, each beside that floor. serveArgs are the daemon's
// flags; the targets are the single and the at-once rows'.
func runDB(ctx context.Context, opt Options, name string, db dbRig, fl sampler, floorName string, serveArgs []string, singleTarget, atOnceTarget string) (Result, []Result, error) {
	n := 200
	if opt.Quick {
		n = 40
	}
	opt.say("%s floor: upsert of 1 KiB ×%d", name, n)
	lat, err := fl.sample(n)
	if err != nil {
		return Result{}, nil, err
	}
	floor := summarize(floorName, lat, sum(lat))
	floor.VsFloor = 1

	opt.say("%s env store/get/update/list", name)
	if _, err := db.store().CreateTask(ctx, workspace.NewTaskRequest{ID: "bench", Description: "env benchmark"}); err != nil {
		return Result{}, nil, err
	}
	results, err := dbEnv(ctx, db.store(), fl, n)
	if err != nil {
		return Result{}, nil, err
	}

	opt.say("%s daemon: markers from 1 and 32 Go agent processes", name)
	single, rounds := 100, 8
	if opt.Quick {
		single, rounds = 25, 3
	}
	goKind := goAgents(opt)
	alone, err := (&rig{dir: db.rootOf(), st: db.store(), cm: newCommits()}).insertsAlone(ctx, db, goKind, 32, rounds, fl)
	if err != nil {
		return Result{}, nil, err
	}
	r := &rig{dir: db.rootOf(), st: db.store(), cm: newCommits()}
	if err := db.watch(ctx, r.cm); err != nil {
		return Result{}, nil, err
	}
	if r.srv, err = startServer(ctx, opt.ServeCmd, r.dir, r.cm.abort, serveArgs...); err != nil {
		return Result{}, nil, err
	}
	defer r.srv.close()
	rows, err := r.dbRows(ctx, goKind, single, rounds, alone, fl, db.commits, singleTarget, atOnceTarget)
	if err != nil {
		return Result{}, nil, err
	}
	return floor, append(results, judgeDaemonRows(rows, floor, "one commit")...), nil
}

// insertsAlone times what no daemon can beat: n agents inserting one
// marker each at the same moment, rounds times, with no daemon running.
// A marker's latency runs from just before its insert to the moment the
// harness knows the round's last insert committed (dbRig.inserted: what
// a daemon committing the whole round at that moment, at no cost, would
// give), and a round's span from the first insert to that moment, as the
// daemon rows' runs to the read of the state showing the last marker.
// The markers are deleted after each round.
func (r *rig) insertsAlone(ctx context.Context, db dbRig, kind agentKind, n, rounds int, fl sampler) (Result, error) {
	const task = "inserts_alone"
	if _, err := r.st.CreateTask(ctx, workspace.NewTaskRequest{ID: task, Description: "the agents' inserts alone"}); err != nil {
		return Result{}, err
	}
	wait, stop, err := db.inserted(ctx, task)
	if err != nil {
		return Result{}, err
	}
	defer stop()
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
		for _, a := range as {
			if _, err := fmt.Fprintf(a.in, "st_%d\nsync\n", next); err != nil {
				return Result{}, err
			}
			next++
			if line, ok := <-a.lines; !ok || line != "prepared" {
				return Result{}, fmt.Errorf("bench: agent %s did not prepare (said %q)", a.name, line)
			}
		}
		for _, a := range as {
			if _, err := io.WriteString(a.in, "go\n"); err != nil {
				return Result{}, err
			}
		}
		last, err := wait(n)
		if err != nil {
			return Result{}, err
		}
		var first time.Time
		var stamps []time.Time
		for _, a := range as {
			_, ts, err := a.report(1)
			if err != nil {
				return Result{}, err
			}
			stamps = append(stamps, ts...)
			if first.IsZero() || ts[0].Before(first) {
				first = ts[0]
			}
		}
		for _, t0 := range stamps {
			lat = append(lat, last.Sub(t0))
		}
		wall += last.Sub(first)
		if err := db.exec(ctx, "DELETE FROM markers WHERE task_id = $1", task); err != nil {
			return Result{}, err
		}
		fls, err := fl.sample(max(4, 32/rounds))
		if err != nil {
			return Result{}, err
		}
		floors = append(floors, fls...)
	}
	if err := db.exec(ctx, "DELETE FROM tasks WHERE id = $1", task); err != nil {
		return Result{}, err
	}
	res := summarize(fmt.Sprintf("%d %s inserting at once, %d rounds, no daemon: first insert → last committed", n, kind.many, rounds), lat, wall)
	res.FloorP50 = floorP50(floors)
	return res, nil
}

func sum(lat []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range lat {
		t += d
	}
	return t
}

// incompressible is a JSON string of size bytes that does not compress,
// as real data mostly does not.
func incompressible(size int) json.RawMessage {
	buf := make([]byte, 0, size)
	buf = append(buf, '"')
	for x := uint32(1); len(buf) < size-1; {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf = append(buf, "abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	return append(buf, '"')
}

// entryStore is a database store's entries.
type entryStore interface {
	StoreEntry(ctx context.Context, sc workspace.Scope, req workspace.StoreRequest) (workspace.Result, error)
	GetEntry(ctx context.Context, sc workspace.Scope, key string) (workspace.Entry, error)
	UpdateEntry(ctx context.Context, sc workspace.Scope, req workspace.UpdateRequest) (workspace.Result, error)
	ListEntries(ctx context.Context, sc workspace.Scope) ([]workspace.ManifestItem, error)
}

// dbEnv times the env operations on a database store whose task "bench"
// exists, each preceded by one floor write, so that both meet the same
// load of the machine: each row is judged against the floor sampled
// with it.
func dbEnv(ctx context.Context, s entryStore, fl sampler, n int) ([]Result, error) {
	scope := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "bench"}
	var out []Result
	time1 := func(name, target string, n int, f func(i int) error) error {
		lat, floors := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
		var wall time.Duration
		for i := 0; i < n; i++ {
			fs, err := fl.sample(1)
			if err != nil {
				return err
			}
			t := time.Now()
			if err := f(i); err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
			d := time.Since(t)
			lat, floors, wall = append(lat, d), append(floors, fs...), wall+d
		}
		r := summarize(name, lat, wall)
		r.FloorP50 = floorP50(floors)
		r.VsFloor = vsFloor(r, Result{P50: r.FloorP50}, latencyRatio)
		r.Note = fmt.Sprintf("p50 ÷ floor p50 %.2f ms sampled with it", r.FloorP50)
		if target != "" {
			r.Note += " (" + target + ")"
		}
		out = append(out, r)
		return nil
	}
	for _, size := range []int{1 << 10, 100 << 10} {
		label := fmt.Sprintf("%d KiB", size>>10)
		value := incompressible(size)
		key := func(i int) string { return fmt.Sprintf("k%d_%d", size, i) }
		target := ""
		if size == 1<<10 {
			target = "target ≤ 1.5"
		}
		if err := time1("env store "+label, target, n, func(i int) error {
			_, err := s.StoreEntry(ctx, scope, workspace.StoreRequest{Key: key(i), Description: "bench", Value: value, Agent: "bench"})
			return err
		}); err != nil {
			return nil, err
		}
		if err := time1("env get "+label, "", n, func(i int) error { _, err := s.GetEntry(ctx, scope, key(i)); return err }); err != nil {
			return nil, err
		}
		if err := time1("env update "+label, "", n, func(i int) error {
			_, err := s.UpdateEntry(ctx, scope, workspace.UpdateRequest{Key: key(i), Value: value, Agent: "bench"})
			return err
		}); err != nil {
			return nil, err
		}
	}
	// The listing: 1,000 entries of 100 KiB in a scope of their own,
	// listed without reading a value.
	big := workspace.Scope{Kind: workspace.ScopeGlobal}
	value := incompressible(100 << 10)
	for i := range 1000 {
		if _, err := s.StoreEntry(ctx, big, workspace.StoreRequest{Key: fmt.Sprintf("key_%04d", i), Description: "a large value", Value: value, Agent: "bench"}); err != nil {
			return nil, err
		}
	}
	if err := time1("env list 1,000 × 100 KiB, without values", "target p50 < 20 ms", max(n/4, 10), func(int) error {
		items, err := s.ListEntries(ctx, big)
		if err == nil && len(items) != 1000 {
			err = fmt.Errorf("%d entries listed, want 1,000", len(items))
		}
		return err
	}); err != nil {
		return nil, err
	}
	return out, nil
}
