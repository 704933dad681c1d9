package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/postgres"
)

// The workload on PostgreSQL: the same env and daemon rows as on files, in
// a temporary schema of the database a postgres:// root names (dropped
// afterwards), each beside PostgreSQL's own floor: one INSERT … ON
// CONFLICT DO UPDATE of a 1 KiB row in its own committed transaction.
//
// The daemon is a `workspaced serve` process on the temporary schema; the
// agents are this binary re-executed in agent mode (AgentMain), each with
// a connection of its own, inserting its markers with the statement of
// docs/PROTOCOL.md. The harness learns when a state becomes visible from a
// trigger of its own on the schema's states table, which notifies at
// commit; the notification's receipt is followed by a read of the state,
// and the stamp is taken after that read, as on files after the read of
// state.json.

// PGReport is what RunPostgres measured.
type PGReport struct {
	// Server is the server's version; Schema the temporary schema.
	Server  string   `json:"server"`
	Schema  string   `json:"schema"`
	Floor   Result   `json:"floor"`
	Results []Result `json:"results"`
	Notes   []string `json:"notes,omitempty"`
}

// pgFloorSQL is the floor's statement.
const pgFloorSQL = "INSERT INTO bench_floor (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"

// pgFloorer is the floor on PostgreSQL: one upsert of a 1 KiB row, its
// own transaction, at a time.
type pgFloorer struct {
	ctx context.Context
	s   *postgres.Store
	v   string
	n   int
}

func (f *pgFloorer) sample(k int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, k)
	for range k {
		f.n++
		t := time.Now()
		if _, err := f.s.Pool().Exec(f.ctx, pgFloorSQL, fmt.Sprint(f.n%8), f.v); err != nil {
			return nil, fmt.Errorf("bench: the floor's upsert: %w", err)
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

// newPGFloorer makes the floor's table in s's schema.
func newPGFloorer(ctx context.Context, s *postgres.Store) (*pgFloorer, error) {
	if _, err := s.Pool().Exec(ctx, "CREATE TABLE bench_floor (k text PRIMARY KEY, v text NOT NULL)"); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return &pgFloorer{ctx: ctx, s: s, v: strings.Repeat("x", 1024)}, nil
}

// tempSchema names a new temporary schema, unique to this process and
// call: workspaced_bench_<pid>_<8 random hex digits>.
func tempSchema() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("workspaced_bench_%d_%s", os.Getpid(), hex.EncodeToString(b[:]))
}

// withSchema is root with ?schema= set to schema.
func withSchema(root, schema string) (string, error) {
	u, err := url.Parse(root)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// RunPostgres runs the workload on the database of opt.Postgres, in a
// temporary schema it creates and drops.
func RunPostgres(ctx context.Context, opt Options) (rep *PGReport, err error) {
	defer interrupted(ctx, &err)
	schema := tempSchema()
	root, err := withSchema(opt.Postgres, schema)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	opt.say("postgres: a temporary schema %s", schema)
	pr, err := newPGRig(ctx, root)
	if err != nil {
		return nil, err
	}
	defer pr.close()
	rep = &PGReport{Schema: schema}
	if err := pr.s.Pool().QueryRow(ctx, "SELECT version()").Scan(&rep.Server); err != nil {
		return nil, err
	}
	fl, err := newPGFloorer(ctx, pr.s)
	if err != nil {
		return nil, err
	}
	n := 200
	if opt.Quick {
		n = 40
	}
	opt.say("postgres floor: upsert of 1 KiB ×%d", n)
	lat, err := fl.sample(n)
	if err != nil {
		return nil, err
	}
	rep.Floor = summarize("floor: INSERT … ON CONFLICT DO UPDATE of 1 KiB, own transaction", lat, sum(lat))
	rep.Floor.VsFloor = 1

	opt.say("postgres env store/get/update/list")
	if err := pr.s.PutTask(ctx, workspace.Task{ID: "bench", Description: "env benchmark"}); err != nil {
		return nil, err
	}
	env, err := dbEnv(ctx, pr.s, fl, n)
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, env...)

	opt.say("postgres daemon: markers from 1 and 32 Go agent processes")
	dres, err := pr.daemon(ctx, opt, fl, root)
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, judgeDaemonRows(dres, rep.Floor, "one commit")...)
	rep.Notes = append(rep.Notes, "postgres: each env row's floor is sampled interleaved with it (one upsert before each operation); the daemon rows' between their rounds, the lower of that and the first floor used")
	return rep, nil
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

// pgRig is the PostgreSQL side of a rig: the store of the temporary
// schema and the harness's listener for state writes.
type pgRig struct {
	root   string
	s      *postgres.Store
	cancel context.CancelFunc
	done   chan struct{}
}

// newPGRig creates the workspace in root's schema and the harness's
// trigger on its states.
func newPGRig(ctx context.Context, root string) (*pgRig, error) {
	s, _, err := postgres.Init(ctx, root)
	if err != nil {
		return nil, err
	}
	pr := &pgRig{root: root, s: s}
	if _, err := s.Pool().Exec(ctx, `CREATE FUNCTION bench_states_notify() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM pg_notify('workspaced_bench_' || TG_TABLE_SCHEMA, NEW.task_id);
			RETURN NULL;
		END $$`); err != nil {
		pr.close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, err := s.Pool().Exec(ctx, `CREATE TRIGGER bench_states_notify AFTER INSERT OR UPDATE ON states
		FOR EACH ROW EXECUTE FUNCTION bench_states_notify()`); err != nil {
		pr.close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return pr, nil
}

// watch listens for state writes and feeds every state read to cm until
// close; an error other than the end aborts cm's waits.
func (pr *pgRig) watch(ctx context.Context, cm *commits) error {
	pc, err := pr.s.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool and ends with the watch: it holds
	// a LISTEN.
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"workspaced_bench_" + pr.s.Schema()}.Sanitize()); err != nil {
		conn.Close(ctx)
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	pr.cancel, pr.done = cancel, make(chan struct{})
	go func() {
		defer close(pr.done)
		defer conn.Close(context.Background())
		for {
			n, err := conn.WaitForNotification(wctx)
			if err != nil {
				if wctx.Err() == nil {
					cm.abort(fmt.Errorf("bench: listen for state writes: %w", err))
				}
				return
			}
			var doc string
			if err := conn.QueryRow(wctx, "SELECT doc FROM states WHERE task_id = $1", n.Payload).Scan(&doc); err != nil {
				if wctx.Err() == nil {
					cm.abort(fmt.Errorf("bench: read the state of %s: %w", n.Payload, err))
				}
				return
			}
			at := time.Now()
			var v taskView
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				cm.abort(fmt.Errorf("bench: state of %s: %w", n.Payload, err))
				return
			}
			cm.observe(n.Payload, v, at)
		}
	}()
	return nil
}

func (pr *pgRig) close() {
	if pr.cancel != nil {
		pr.cancel()
		<-pr.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = pr.s.Pool().Exec(ctx, "DROP SCHEMA "+pgx.Identifier{pr.s.Schema()}.Sanitize()+" CASCADE")
	pr.s.Close()
}

// prepare makes task with n subtasks st_1 … st_n executing (a plan and
// its approving review, taken by the daemon) and writes every subtask's
// output, as on files.
func (pr *pgRig) prepare(ctx context.Context, cm *commits, task string, n int) error {
	s := pr.s
	if err := s.PutTask(ctx, workspace.Task{ID: task, Description: "daemon benchmark"}); err != nil {
		return err
	}
	now := time.Now().UTC()
	p := workspace.Plan{ID: "plan_" + task, TaskID: task, Version: 1, CreatedAt: now, CreatedBy: "coordinator"}
	for i := 1; i <= n; i++ {
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: fmt.Sprintf("st_%d", i), Description: "bench", Parallelizable: true})
	}
	rv := workspace.Review{ID: "r1", Type: "plan_review", Reviewer: "reviewer", ReviewedAt: &now, Verdict: "approved"}
	for path, v := range map[string]any{"plan.json": p, "reviews/r1.json": rv} {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := s.PutProduct(ctx, task, path, data); err != nil {
			return err
		}
	}
	for _, m := range []workspace.Marker{{AgentID: "coordinator", OutputFile: "plan.json"}, {AgentID: "reviewer", OutputFile: "reviews/r1.json"}} {
		m.Status = "completed"
		if _, err := s.DropMarker(ctx, task, workspace.KindDone, m); err != nil {
			return err
		}
	}
	if err := cm.waitState(task, "executing", func(v taskView) bool { return v.Status == "executing" }, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		sub := fmt.Sprintf("st_%d", i)
		if err := s.PutProduct(ctx, task, "outputs/"+sub+".json", []byte(`{"subtask_id":"`+sub+`","summary":"ok"}`)); err != nil {
			return err
		}
	}
	return nil
}

// daemon starts `workspaced serve` on the schema and runs the daemon rows
// with Go agent processes, as measureDaemon does on files. Before the
// daemon starts, the agents' inserts alone are timed (insertsAlone).
func (pr *pgRig) daemon(ctx context.Context, opt Options, fl sampler, root string) ([]daemonRow, error) {
	single, rounds := 100, 8
	if opt.Quick {
		single, rounds = 25, 3
	}
	goKind := goAgents(opt)
	alone, err := pr.insertsAlone(ctx, goKind, root, 32, rounds, fl)
	if err != nil {
		return nil, err
	}
	r := &rig{dir: root, cm: newCommits(), pg: pr}
	if err := pr.watch(ctx, r.cm); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, opt.ServeCmd, root, r.cm.abort)
	if err != nil {
		return nil, err
	}
	r.srv = srv
	defer srv.close()
	return r.dbRows(ctx, goKind, single, rounds, alone, fl, pr.commits, "", "target ≥ 5")
}

// insertsAlone times what no daemon can beat: n agents inserting one
// marker each at the same moment, rounds times, with no daemon running.
// The harness listens on the markers' channel, whose notification each
// insert sends at its commit; a marker's latency runs from just before
// its insert to the receipt of its round's last notification (what a
// daemon committing the whole round the moment the last insert commits,
// at no cost, would give), and a round's span from the first insert to
// that receipt, as the daemon rows' runs to the read of the state showing
// the last marker. The markers are deleted after each round.
func (pr *pgRig) insertsAlone(ctx context.Context, kind agentKind, root string, n, rounds int, fl sampler) (Result, error) {
	const task = "inserts_alone"
	s := pr.s
	if err := s.PutTask(ctx, workspace.Task{ID: task, Description: "the agents' inserts alone"}); err != nil {
		return Result{}, err
	}
	pc, err := s.Pool().Acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	conn := pc.Hijack() // it holds a LISTEN: it leaves the pool
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"workspaced_markers_" + s.Schema()}.Sanitize()); err != nil {
		return Result{}, err
	}
	r := &rig{dir: root, cm: newCommits(), pg: pr}
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
		var last time.Time
		for seen := 0; seen < n; {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			note, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return Result{}, fmt.Errorf("bench: wait for the agents' inserts: %w", err)
			}
			if note.Payload == task {
				seen, last = seen+1, time.Now()
			}
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
		if _, err := s.Pool().Exec(ctx, "DELETE FROM markers WHERE task_id = $1", task); err != nil {
			return Result{}, err
		}
		fls, err := fl.sample(max(4, 32/rounds))
		if err != nil {
			return Result{}, err
		}
		floors = append(floors, fls...)
	}
	if _, err := s.Pool().Exec(ctx, "DELETE FROM tasks WHERE id = $1", task); err != nil {
		return Result{}, err
	}
	res := summarize(fmt.Sprintf("%d %s inserting at once, %d rounds, no daemon: first insert → last committed", n, kind.many, rounds), lat, wall)
	res.FloorP50 = floorP50(floors)
	return res, nil
}

// commits counts the agents' markers the daemon journaled for task and
// the commits it took them in (the records of one commit share their
// taken_at).
func (pr *pgRig) commits(ctx context.Context, task string) (markers, commits int, err error) {
	err = pr.s.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT taken_at) FROM journal
		WHERE task_id = $1 AND starts_with(name, '.done.agent_')`, task).Scan(&markers, &commits)
	return markers, commits, err
}

// drain measures the daemon alone over a burst: it is stopped (SIGSTOP)
// while n agents insert per markers each, then resumed; a marker's
// latency runs from the resumption to the first read of a state showing
// it, and the rate is every marker over the resumption → the last such
// read. Floor samples follow, off the clock.
func (r *rig) drain(ctx context.Context, kind agentKind, n, per int, srv *server, fl sampler) (Result, error) {
	task := fmt.Sprintf("drain%d_%d", n, per)
	if err := r.prepare(ctx, task, n*per); err != nil {
		return Result{}, err
	}
	as, err := r.startAgents(kind, task, n)
	if err != nil {
		return Result{}, err
	}
	defer closeAll(as)
	var keys []string
	next := 1
	for _, a := range as {
		var b strings.Builder
		for range per {
			sub := fmt.Sprintf("st_%d", next)
			next++
			b.WriteString(sub + "\n")
			keys = append(keys, task+"/"+sub)
		}
		if _, err := io.WriteString(a.in, b.String()+"sync\n"); err != nil {
			return Result{}, err
		}
		if line, ok := <-a.lines; !ok || line != "prepared" {
			return Result{}, fmt.Errorf("bench: agent %s did not prepare (said %q)", a.name, line)
		}
	}
	stop := srv.pause
	if r.sq != nil {
		stop = func() error { return r.sq.stopIdle(ctx, srv) }
	}
	if err := stop(); err != nil {
		return Result{}, err
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	for _, a := range as {
		if _, err := io.WriteString(a.in, "go\n"); err != nil {
			return Result{}, err
		}
	}
	// A report is answered once the agent's markers are all inserted.
	for _, a := range as {
		if _, _, err := a.report(per); err != nil {
			return Result{}, err
		}
	}
	t0 := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return Result{}, err
	}
	resumed = true
	if err := r.cm.wait(keys, time.Now().Add(2*time.Minute)); err != nil {
		return Result{}, err
	}
	lat := make([]time.Duration, 0, len(keys))
	var last time.Time
	for _, k := range keys {
		at := r.cm.at(k)
		lat = append(lat, at.Sub(t0))
		if at.After(last) {
			last = at
		}
	}
	res := summarize(fmt.Sprintf("daemon draining %d agents × %d markers inserted while it was stopped", n, per), lat, last.Sub(t0))
	floors, err := fl.sample(32)
	if err != nil {
		return Result{}, err
	}
	res.FloorP50 = floorP50(floors)
	return res, nil
}

// pgDropper inserts done markers on a connection of its own.
type pgDropper struct {
	conn       *pgx.Conn
	task, name string
}

// pgInsertMarker is the statement of docs/PROTOCOL.md an agent drops a
// marker with.
const pgInsertMarker = "INSERT INTO markers (task_id, kind, name, body) VALUES ($1, 'done', $2, $3)"

func newPGDropper(root, task, name string) (*pgDropper, error) {
	conn, schema, err := postgres.ParseURL(root)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(conn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.RuntimeParams["application_name"] = "workspaced bench agent"
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// Prepared once, so that a drop is one round trip.
	if _, err := c.Prepare(ctx, pgInsertMarker, pgInsertMarker); err != nil {
		c.Close(ctx)
		return nil, err
	}
	return &pgDropper{conn: c, task: task, name: name}, nil
}

func (d *pgDropper) close() { d.conn.Close(context.Background()) }

// pgHeld is a marker row ready to insert.
type pgHeld struct{ name, body string }

func (d *pgDropper) prepare(sub string) (any, error) {
	now := time.Now().UTC()
	m := workspace.Marker{AgentID: d.name, SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed", CompletedAt: &now}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return pgHeld{name: workspace.DonePrefix + d.name + "." + sub, body: string(data)}, nil
}

func (d *pgDropper) drop(held any) error {
	h := held.(pgHeld)
	ctx, cancel := context.WithTimeout(context.Background(), agentDropTimeout)
	defer cancel()
	_, err := d.conn.Exec(ctx, pgInsertMarker, d.task, h.name, h.body)
	return err
}
