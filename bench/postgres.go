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
	rep.Floor, rep.Results, err = runDB(ctx, opt, "postgres", pr, fl, "floor: INSERT … ON CONFLICT DO UPDATE of 1 KiB, own transaction",
		nil, "", "target ≥ 5")
	if err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, "postgres: each env row's floor is sampled interleaved with it (one upsert before each operation); the daemon rows' between their rounds, the lower of that and the first floor used")
	return rep, nil
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
	// bench_commits holds, per task, the daemon's clock at its last state
	// write, in the daemon's transaction (the verdict rows' clock).
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE bench_commits (task_id text PRIMARY KEY, at timestamptz NOT NULL)`); err != nil {
		pr.close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, err := s.Pool().Exec(ctx, `CREATE FUNCTION bench_states_notify() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO bench_commits VALUES (NEW.task_id, clock_timestamp())
				ON CONFLICT (task_id) DO UPDATE SET at = excluded.at;
			PERFORM pg_notify('workspaced_bench_' || TG_TABLE_SCHEMA, NEW.task_id);
			RETURN NULL;
		END $$`); err != nil {
		pr.close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	// On state_rows, the table the states view reads: the daemon writes
	// the row (migration 0014_state_parts), whole or listing its parts.
	if _, err := s.Pool().Exec(ctx, `CREATE TRIGGER bench_states_notify AFTER INSERT OR UPDATE ON state_rows
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
			if cm.quiet.Load() {
				continue
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

func (pr *pgRig) rootOf() string         { return pr.root }
func (pr *pgRig) store() workspace.Store { return pr.s }

func (pr *pgRig) exec(ctx context.Context, query string, args ...any) error {
	_, err := pr.s.Pool().Exec(ctx, query, args...)
	return err
}

// inserted listens on the markers' channel, whose notification each
// insert sends at its commit: a round's inserts are known committed at
// the receipt of its last notification.
func (pr *pgRig) inserted(ctx context.Context, task string) (func(n int) (time.Time, error), func(), error) {
	pc, err := pr.s.Pool().Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn := pc.Hijack() // it holds a LISTEN: it leaves the pool
	stop := func() { conn.Close(context.Background()) }
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"workspaced_markers_" + pr.s.Schema()}.Sanitize()); err != nil {
		stop()
		return nil, nil, err
	}
	return func(n int) (last time.Time, err error) {
		for seen := 0; seen < n; {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			note, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return last, fmt.Errorf("bench: wait for the agents' inserts: %w", err)
			}
			if note.Payload == task {
				seen, last = seen+1, time.Now()
			}
		}
		return last, nil
	}, stop, nil
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
