package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/postgres"
)

// pgws is a workspace in a fresh PostgreSQL database, made by
// `workspaced init`; its Root is the root URL, with ?schema=.
type pgws struct {
	*clitest.WS
	conn   string // the connection string psql takes
	schema string
	s      *postgres.Store
}

func newPGWS(t *testing.T) *pgws {
	t.Helper()
	return newPGWSAt(t, pgtest.Schema(t))
}

// newPGWSAt is newPGWS on root, a schema's root URL.
func newPGWSAt(t *testing.T, root string) *pgws {
	t.Helper()
	conn, schema, err := postgres.ParseURL(root)
	if err != nil {
		t.Fatal(err)
	}
	w := &pgws{WS: clitest.At(t, root), schema: schema, conn: conn}
	r := w.Run("--root", w.Root, "init")
	if r.Code != 0 || !strings.Contains(r.Stdout, "schema "+schema) {
		t.Fatalf("init: %s", r)
	}
	s, err := postgres.Open(context.Background(), w.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	w.s = s
	return w
}

// leader waits until the lease names a process of pid, and returns its
// epoch.
func (w *pgws) leader(pid int, within time.Duration) int64 {
	w.T.Helper()
	var epoch int64
	poll.Until(w.T, within, fmt.Sprintf("pid %d to lead", pid), func() (bool, string) {
		li, err := w.s.Lease(context.Background())
		epoch = li.Epoch
		return err == nil && li.Live && strings.HasSuffix(li.Holder, fmt.Sprintf(":%d", pid)), fmt.Sprintf("lease %+v, %v", li, err)
	})
	return epoch
}

// serve starts the daemon on the schema and returns once it holds the
// lease, so that a command waiting for a verdict finds a daemon serving.
func (w *pgws) serve(args ...string) *clitest.Daemon {
	w.T.Helper()
	d := w.Start(args...)
	w.leader(d.Pid(), 60*time.Second)
	return d
}

// wroteOrDone waits until the daemon of epoch has journaled a marker, or
// agentsDone is closed (no marker is left to write).
func (w *pgws) wroteOrDone(epoch int64, agentsDone <-chan struct{}, within time.Duration) {
	w.T.Helper()
	deadline := time.Now().Add(within)
	for {
		var wrote bool
		err := w.s.Pool().QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM journal WHERE epoch = $1)", epoch).Scan(&wrote)
		if err == nil && wrote {
			return
		}
		select {
		case <-agentsDone:
			return
		default:
		}
		if time.Now().After(deadline) {
			w.T.Fatalf("the daemon of epoch %d wrote nothing within %v (%v)", epoch, within, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// plan creates task id with n independent subtasks, and drops the
// planner's and the reviewer's markers that make it executing once a
// daemon takes them.
func (w *pgws) plan(id string, n int) {
	w.T.Helper()
	ctx := context.Background()
	if err := w.s.PutTask(ctx, workspace.Task{ID: id, Description: "burst"}); err != nil {
		w.T.Fatal(err)
	}
	p := workspace.Plan{ID: "p1", TaskID: id, Version: 1, CreatedAt: time.Now().UTC(), CreatedBy: "planner"}
	for i := range n {
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: fmt.Sprintf("s%d", i), Description: "work", Parallelizable: true})
	}
	at := time.Now().UTC()
	for path, v := range map[string]any{"plan.json": p, "reviews/r1.json": workspace.Review{ID: "r1", Type: "plan_review", Reviewer: "reviewer", ReviewedAt: &at, Verdict: "approved"}} {
		data, _ := json.Marshal(v)
		if err := w.s.PutProduct(ctx, id, path, data); err != nil {
			w.T.Fatal(err)
		}
	}
	for _, m := range []workspace.Marker{{AgentID: "planner", OutputFile: "plan.json"}, {AgentID: "reviewer", OutputFile: "reviews/r1.json"}} {
		m.Status = "completed"
		if _, err := w.s.DropMarker(ctx, id, workspace.KindDone, m); err != nil {
			w.T.Fatal(err)
		}
	}
}

// agentScript is the SQL one agent runs with psql: for each subtask a
// claim, the output, a done, each its own transaction, paced by pause.
func (w *pgws) agentScript(task, agent string, subs []int, pause time.Duration) string {
	return w.gatedScript(task, agent, subs, pause, 0)
}

// gatedScript is agentScript whose agent, when every > 0, waits before
// its subtasks every·k … every·(k+1)-1 until the test has opened gate k
// (burst_gate.n ≥ k, see openGate): the burst lasts as many gates as the
// test opens, however fast or slow the machine. An agent at a gate looks
// every 50 ms: the next daemon takes longer than that to start, and each
// look is the server's CPU for as long as the daemons take.
func (w *pgws) gatedScript(task, agent string, subs []int, pause time.Duration, every int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SET search_path TO %s;\n", w.schema)
	for j, i := range subs {
		if every > 0 && j > 0 && j%every == 0 {
			fmt.Fprintf(&b, "DO $$ BEGIN WHILE (SELECT n FROM burst_gate) < %d LOOP PERFORM pg_sleep(0.05); END LOOP; END $$;\n", j/every)
		}
		sub := fmt.Sprintf("s%d", i)
		fmt.Fprintf(&b, "INSERT INTO markers (task_id, kind, name, body) VALUES ('%s', 'claim', '.claim.%s.%s', '{\"agent_id\": \"%s\", \"subtask_id\": \"%s\"}');\n", task, agent, sub, agent, sub)
		if pause > 0 {
			fmt.Fprintf(&b, "SELECT pg_sleep(%f);\n", pause.Seconds())
		}
		fmt.Fprintf(&b, "INSERT INTO products (task_id, path, body) VALUES ('%s', 'outputs/%s.json', '{\"subtask_id\": \"%s\", \"worker_id\": \"%s\", \"status\": \"completed\"}') ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body;\n", task, sub, sub, agent)
		fmt.Fprintf(&b, "INSERT INTO markers (task_id, kind, name, body) VALUES ('%s', 'done', '.done.%s.%s', '{\"agent_id\": \"%s\", \"subtask_id\": \"%s\", \"output_file\": \"outputs/%s.json\", \"status\": \"completed\"}');\n", task, agent, sub, agent, sub, sub)
	}
	return b.String()
}

// agents starts one psql process per script and returns a channel that
// is closed when all have exited (failing the test on an error). Those
// still running when the test ends (it failed) are killed, and waited
// for: a goroutine must not report on a test that has ended.
func (w *pgws) agents(scripts []string) <-chan struct{} {
	w.T.Helper()
	psql := pgtest.Tool(w.T, "psql")
	dir := w.T.TempDir()
	var wg sync.WaitGroup
	var ended atomic.Bool
	var cmds []*exec.Cmd
	w.T.Cleanup(func() {
		ended.Store(true)
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
		}
		wg.Wait()
	})
	for i, sc := range scripts {
		f := filepath.Join(dir, fmt.Sprintf("agent%d.sql", i))
		if err := os.WriteFile(f, []byte(sc), 0o644); err != nil {
			w.T.Fatal(err)
		}
		cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", w.conn, "-f", f, "-o", "/dev/null")
		var errb clitest.Log
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			w.T.Fatal(err)
		}
		cmds = append(cmds, cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil && !ended.Load() {
				w.T.Errorf("agent %d: %v: %s", i, err, errb.String())
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// waitApplied waits until no marker waits and every task is completed.
func (w *pgws) waitApplied(tasks []string, within time.Duration) {
	w.T.Helper()
	ctx := context.Background()
	poll.Until(w.T, within, "every marker applied", func() (bool, string) {
		var waiting int
		_ = w.s.Pool().QueryRow(ctx, "SELECT count(*) FROM markers").Scan(&waiting)
		done := waiting == 0
		for _, id := range tasks {
			if st, err := w.s.ReadState(ctx, id); err != nil || st.Status != "completed" {
				done = false
			}
		}
		return done, fmt.Sprintf("%d markers waiting", waiting)
	})
}

// checkExactlyOnce checks each task's journal: sequence numbers 1…n
// without a gap, every marker name once, none rejected, the state valid
// and equal to the journal replayed, every subtask completed by the agent
// that claimed it. It returns the epochs of the journal rows by task.
func (w *pgws) checkExactlyOnce(tasks []string, subs int) map[string][]int64 {
	w.T.Helper()
	ctx := context.Background()
	epochs := map[string][]int64{}
	for _, id := range tasks {
		rows, err := w.s.Pool().Query(ctx, "SELECT seq, name, epoch FROM journal WHERE task_id = $1 ORDER BY seq", id)
		if err != nil {
			w.T.Fatal(err)
		}
		names := map[string]int{}
		var n int64
		for rows.Next() {
			var seq, epoch int64
			var name string
			if err := rows.Scan(&seq, &name, &epoch); err != nil {
				w.T.Fatal(err)
			}
			n++
			if seq != n {
				w.T.Fatalf("task %s: journal seq %d at position %d", id, seq, n)
			}
			names[name]++
			epochs[id] = append(epochs[id], epoch)
		}
		rows.Close()
		if want := int64(2 + 2*subs); n != want {
			w.T.Fatalf("task %s: %d journal rows, want %d", id, n, want)
		}
		for name, c := range names {
			if c != 1 {
				w.T.Fatalf("task %s: marker %s journaled %d times", id, name, c)
			}
		}
		recs, err := w.s.ReadJournal(ctx, id)
		if err != nil {
			w.T.Fatal(err)
		}
		for _, r := range recs {
			if r.Rejected != "" {
				w.T.Fatalf("task %s: record %d rejected: %s", id, r.Seq, r.Rejected)
			}
		}
		st, err := w.s.ReadState(ctx, id)
		if err != nil {
			w.T.Fatal(err)
		}
		var doc string
		_ = w.s.Pool().QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", id).Scan(&doc)
		if err := schemas.Validate(schemas.KindState, []byte(doc)); err != nil {
			w.T.Fatalf("task %s: state does not validate: %v", id, err)
		}
		task, err := w.s.GetTask(ctx, id)
		if err != nil {
			w.T.Fatal(err)
		}
		re, _, err := machine.Replay(task, nil, recs)
		if err != nil {
			w.T.Fatal(err)
		}
		a, _ := json.Marshal(st)
		b, _ := json.Marshal(re)
		if !bytes.Equal(a, b) {
			w.T.Fatalf("task %s: state rebuilt from the journal differs:\n%s\n%s", id, a, b)
		}
		if len(st.Errors) != 0 || st.Status != "completed" {
			w.T.Fatalf("task %s: status %s, errors %v", id, st.Status, st.Errors)
		}
	}
	return epochs
}

// TestPostgresServeSIGKILL: agent processes drop 160 claim and done
// markers while the daemon is killed with SIGKILL at random moments, over
// and over; every marker is applied exactly once, every state written is
// valid, and the journal replayed gives the state. The kills are what the
// test is about, not the number of markers: each agent waits at a gate
// before each of its subtasks, so that some twenty daemons each take a
// part of the burst and are killed in it.
func TestPostgresServeSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the SIGKILL test runs for several seconds")
	}
	w := newPGWS(t)
	const tasks, subs, perTask = 2, 40, 2 // 2 × 40 × (claim + done) = 160 markers
	// Each agent has 20 subtasks and goes on by one each time the test
	// opens the gate after a kill: the burst spans 19 kills, however busy
	// the machine.
	const gateEvery = 1
	ctx := context.Background()
	if _, err := w.s.Pool().Exec(ctx, "CREATE TABLE burst_gate (n int NOT NULL); INSERT INTO burst_gate VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	var ids, scripts []string
	for i := range tasks {
		id := fmt.Sprintf("task_%d", i)
		ids = append(ids, id)
		w.plan(id, subs)
		for a := range perTask {
			var mine []int
			for k := a; k < subs; k += perTask {
				mine = append(mine, k)
			}
			scripts = append(scripts, w.gatedScript(id, fmt.Sprintf("w%d_%d", i, a), mine, 5*time.Millisecond, gateEvery))
		}
	}
	agentsDone := w.agents(scripts)
	kills, midBurst := 0, 0
	for running := true; running || kills < 20; {
		d := w.Start()
		// Killed at a random moment of its leading, once it has written
		// (while the agents still drop markers): however busy the
		// machine, every daemon killed mid-burst wrote part of it.
		epoch := w.leader(d.Cmd.Process.Pid, 60*time.Second)
		w.wroteOrDone(epoch, agentsDone, 30*time.Second)
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		_ = d.Cmd.Process.Signal(syscall.SIGKILL)
		<-d.Done()
		kills++
		if strings.Contains(d.Log.String(), "exits 4") || strings.Contains(d.Log.String(), "another daemon") {
			t.Fatalf("a daemon started after a SIGKILL found the lease held: %s", d.Log.String())
		}
		// Every state written so far is valid.
		rows, err := w.s.Pool().Query(ctx, "SELECT task_id, doc FROM states")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, doc string
			_ = rows.Scan(&id, &doc)
			if err := schemas.Validate(schemas.KindState, []byte(doc)); err != nil {
				t.Fatalf("after kill %d: state of %s does not validate: %v", kills, id, err)
			}
		}
		rows.Close()
		select {
		case <-agentsDone:
			running = false
		default:
			midBurst++
		}
		if _, err := w.s.Pool().Exec(ctx, "UPDATE burst_gate SET n = n + 1"); err != nil {
			t.Fatal(err)
		}
	}
	// The last daemon leads before the checks: the burst may be applied
	// already, and a daemon stopped before it has set up its handling of
	// SIGTERM dies of it.
	d := w.serve()
	w.waitApplied(ids, 60*time.Second)
	epochs := w.checkExactlyOnce(ids, subs)
	distinct := map[int64]bool{}
	for _, es := range epochs {
		for _, e := range es {
			distinct[e] = true
		}
	}
	t.Logf("%d kills (%d while the agents were dropping markers); the journal was written by %d daemons", kills, midBurst, len(distinct))
	if midBurst < 10 || len(distinct) < 5 {
		t.Fatalf("%d kills mid-burst and %d daemons writing the journal: the kills did not land mid-burst", midBurst, len(distinct))
	}
	d.Stop()
}

// TestPostgresSecondServeExits4: without --standby a second daemon exits
// 4 naming the holder.
func TestPostgresSecondServeExits4(t *testing.T) {
	t.Parallel()
	w := newPGWS(t)
	d := w.Start()
	w.leader(d.Cmd.Process.Pid, 60*time.Second)
	r := w.Run("--root", w.Root, "serve")
	if r.Code != 4 || !strings.Contains(r.Stderr, fmt.Sprintf(":%d", d.Cmd.Process.Pid)) || !strings.Contains(r.Stderr, "hint:") {
		t.Fatalf("second serve: %s", r)
	}
}

// TestPostgresFailover: SIGKILL the leader mid-burst and the standby
// finishes the burst; SIGSTOP the new leader, a second standby takes over
// once the lease lapses, and after SIGCONT the stalled one writes nothing
// more: it steps down, as the journal's epochs show.
func TestPostgresFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the failover test waits for leases")
	}
	w := newPGWS(t)
	ctx := context.Background()
	a := w.Start("--standby", "--lease", "2s")
	epochA := w.leader(a.Cmd.Process.Pid, 60*time.Second)
	b := w.Start("--standby", "--lease", "2s")
	w.plan("burst", 150)
	var mine []int
	for k := range 150 {
		mine = append(mine, k)
	}
	done := w.agents([]string{w.agentScript("burst", "w1", mine, 5*time.Millisecond)})
	// Mid-burst: some markers taken, not all.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		_ = w.s.Pool().QueryRow(ctx, "SELECT count(*) FROM journal WHERE task_id = 'burst'").Scan(&n)
		if n >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader took %d markers in 30s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = a.Cmd.Process.Signal(syscall.SIGKILL)
	<-a.Done()
	killedAt := time.Now()
	epochB := w.leader(b.Cmd.Process.Pid, 10*time.Second)
	t.Logf("standby led %v after the leader's SIGKILL", time.Since(killedAt))
	<-done
	w.waitApplied([]string{"burst"}, 30*time.Second)
	epochs := w.checkExactlyOnce([]string{"burst"}, 150)["burst"]
	// The burst ends under B's epoch, or a later one: on a loaded machine
	// B's own 2 s lease can lapse, and B leads again under a new epoch.
	if epochB <= epochA || epochs[len(epochs)-1] < epochB {
		t.Fatalf("epochs: A %d, B %d, the journal's last %d", epochA, epochB, epochs[len(epochs)-1])
	}

	// SIGSTOP the leader; a new standby takes over after the lease.
	c := w.Start("--standby", "--lease", "2s")
	if err := b.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	epochC := w.leader(c.Cmd.Process.Pid, 20*time.Second)
	w.plan("after", 20)
	var all []int
	for k := range 20 {
		all = append(all, k)
	}
	<-w.agents([]string{w.agentScript("after", "w2", all, 0)})
	w.waitApplied([]string{"after"}, 30*time.Second)
	if err := b.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The resumed one finds itself fenced and steps down.
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(b.Log.String(), "stepped down") {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed daemon did not step down:\n%s", b.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// More markers after the resume: all taken by C.
	w.plan("later", 10)
	var ten []int
	for k := range 10 {
		ten = append(ten, k)
	}
	<-w.agents([]string{w.agentScript("later", "w3", ten, 0)})
	w.waitApplied([]string{"later"}, 30*time.Second)
	w.checkExactlyOnce([]string{"after"}, 20)
	w.checkExactlyOnce([]string{"later"}, 10)
	// Fencing: nothing after the takeover is written by an epoch older
	// than C's, the stalled one's above all. A later epoch is a lawful
	// leader: on a loaded machine C's own 2 s lease can lapse, and the
	// next to take it writes under a new epoch.
	var stale int
	if err := w.s.Pool().QueryRow(ctx, "SELECT count(*) FROM journal WHERE task_id IN ('after', 'later') AND epoch < $1", epochC).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	if stale != 0 {
		t.Fatalf("%d journal rows after the takeover were written by an epoch older than %d", stale, epochC)
	}
	li, _ := w.s.Lease(ctx)
	if li.Epoch < epochC {
		t.Fatalf("lease after the resume: %+v, want epoch %d or later", li, epochC)
	}
	if li.Epoch != epochC {
		t.Logf("C's lease lapsed: the lease is at epoch %d now (%s)", li.Epoch, li.Holder)
	} else if !strings.HasSuffix(li.Holder, fmt.Sprintf(":%d", c.Cmd.Process.Pid)) {
		t.Fatalf("lease after the resume: %+v, epoch %d held by another than pid %d", li, epochC, c.Cmd.Process.Pid)
	}
}

// TestPostgresRestartUnderDaemon: PostgreSQL is restarted while the
// daemon serves and agents drop markers; the daemon reconnects, and every
// marker an agent got committed is applied exactly once.
func TestPostgresRestartUnderDaemon(t *testing.T) {
	t.Parallel()
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("the server of " + pgtest.EnvURL + " is not restarted by the tests")
	}
	// A cluster of its own, restarted without disturbing the others'.
	ctx := context.Background()
	c, err := pgtest.Start(ctx)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		optdep.Skip(t, "postgres", err.Error())
	}
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	w := newPGWSAt(t, c.Schema(t))
	d := w.Start()
	w.leader(d.Cmd.Process.Pid, 60*time.Second)
	const subs = 60
	w.plan("restart", subs)
	// Agents that retry a marker whose insert failed, unless it arrived
	// after all (the connection broke after the commit).
	drop := func(name, kind, body string) error {
		for range 200 {
			_, err := w.s.Pool().Exec(ctx, "INSERT INTO markers (task_id, kind, name, body) VALUES ('restart', $1, $2, $3)", kind, name, body)
			if err == nil {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
			var there bool
			if w.s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM markers WHERE name = $1)
				OR EXISTS (SELECT 1 FROM journal WHERE name = $1)`, name).Scan(&there) == nil && there {
				return nil
			}
		}
		return fmt.Errorf("marker %s not dropped", name)
	}
	var wg sync.WaitGroup
	for a := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := a; k < subs; k += 3 {
				sub, agent := fmt.Sprintf("s%d", k), fmt.Sprintf("w%d", a)
				if err := drop(".claim."+agent+"."+sub, "claim", fmt.Sprintf(`{"agent_id": %q, "subtask_id": %q}`, agent, sub)); err != nil {
					t.Error(err)
					return
				}
				for {
					if _, err := w.s.Pool().Exec(ctx, `INSERT INTO products (task_id, path, body) VALUES ('restart', $1, $2)
						ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body`, "outputs/"+sub+".json",
						fmt.Sprintf(`{"subtask_id": %q, "status": "completed"}`, sub)); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err := drop(".done."+agent+"."+sub, "done", fmt.Sprintf(`{"agent_id": %q, "subtask_id": %q, "output_file": "outputs/%s.json"}`, agent, sub, sub)); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	// Restart mid-burst.
	for {
		var n int
		_ = w.s.Pool().QueryRow(ctx, "SELECT count(*) FROM journal WHERE task_id = 'restart'").Scan(&n)
		if n >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	w.waitApplied([]string{"restart"}, 60*time.Second)
	w.checkExactlyOnce([]string{"restart"}, subs)
	select {
	case <-d.Done():
		t.Fatalf("the daemon exited over the restart (%v):\n%s", d.Cmd.ProcessState, d.Log.String())
	default:
	}
	if !strings.Contains(d.Log.String(), "listen for markers") {
		t.Fatalf("the daemon's log does not show the lost connection:\n%s", d.Log.String())
	}
}
