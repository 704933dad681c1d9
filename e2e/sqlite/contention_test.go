package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/schemas"
)

// contentionEnv overrides how long TestContention runs (a Go duration,
// WORKSPACED_CONTENTION=60s for the long soak); the default is
// defaultContention, long enough for every kind of agent to have its
// markers journaled while the others write, which is what the checks
// need.
const contentionEnv = "WORKSPACED_CONTENTION"

const (
	defaultContention = 5 * time.Second
	cliAgents         = 12 // with the daemon, the panel, the MCP server and the Python worker: 16 processes
	panelReaders      = 2  // goroutines polling the panel's API
	hiveSize          = 40 // subtasks of each task the agents work through
	counterKeys       = 3  // version-checked counters of each task
	walLimit          = 64 << 20
	mcpGrace          = 2 * time.Minute // how long past the deadline the MCP agent may take to write its first marker
)

// busy is what SQLite's lock contention looks like in any message.
var busy = regexp.MustCompile(`(?i)database (table )?is locked|sqlite_(busy|locked)|stayed locked`)

// pythonWorker is the Hivemind worker of the examples, on the package
// workspaced (pythonSrc), which reaches a sqlite: root with the standard
// library's sqlite3.
var (
	pythonWorker = filepath.Join("..", "..", "examples", "agents", "python", "hivemind_worker.py")
	pythonSrc    = filepath.Join("..", "..", "clients", "python", "src")
)

// TestContention runs sixteen processes on one sqlite: root for
// $WORKSPACED_CONTENTION (default 5 s): the daemon, twelve CLI agents
// (each running one workspaced command after another: version-checked
// increments of the task's counters, state reads, claims waited for,
// outputs with their done markers), the Python sqlite3 worker, an MCP
// server driven by the Go SDK's client doing the same, and the panel,
// polled over HTTP and followed on its stream of events. Tasks of
// hiveSize subtasks follow one another as the agents finish them. Then:
// no process ever met a busy error; every counter stands at the
// increments reported; every marker reported was journaled once, each
// task's journal is 1..n and its state is the fold of it; the stream
// pushed every event once; the database passes integrity_check and its
// WAL stayed under 64 MiB. It waits on conditions only: how fast things
// go is logged, never asserted.
func TestContention(t *testing.T) {
	// Not parallel: its sixteen processes are the load it is about, and
	// other tests beside them would only lengthen the run.
	python, err := clitest.Python3()
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: the Python sqlite3 worker cannot take part")
	}
	dur := defaultContention
	if v := os.Getenv(contentionEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", contentionEnv, v, err)
		}
		dur = d
	}
	w, db := clitest.NewSQLite(t)
	r := &run{t: t, w: w, db: db, python: python, markers: map[string]string{}, incs: map[string]int{}, dones: map[string]string{}}
	r.hives.r = r
	panel, panelLog := r.startPanel()
	stream := r.followPanel(panel)
	r.hives.next("")
	if t.Failed() {
		t.FailNow()
	}
	daemon := w.Serve()

	start := time.Now()
	r.deadline = start.Add(dur)
	ctx, cancel := context.WithDeadline(t.Context(), r.deadline)
	defer cancel()
	var wg sync.WaitGroup
	for i := range cliAgents {
		wg.Go(func() { r.cliAgent(ctx, fmt.Sprintf("cli_%d", i+1)) })
	}
	wg.Go(func() { r.mcpAgent(ctx, "mcp_1") })
	wg.Go(func() { r.pythonAgent(ctx, "py_1") })
	for range panelReaders {
		wg.Go(func() { r.readPanel(ctx, panel) })
	}
	wg.Wait()
	elapsed := time.Since(start)

	sdb := r.openDB()
	r.awaitMarkersTaken(sdb)
	applied := r.checkJournal(sdb)
	r.checkStates(sdb, panel)
	writes := r.checkCounters(sdb)
	r.checkDatabase(sdb)
	streamed := stream.check(r, sdb)
	r.scan("the daemon", daemon.Log.String())
	r.scan("the panel", panelLog.String())
	if l := daemon.Log.String(); strings.Contains(l, "level=ERROR") {
		t.Errorf("the daemon logged errors:\n%s", l)
	}
	secs := elapsed.Seconds()
	t.Logf("%s, %d tasks: %d markers applied (%.0f/s), %d entry writes (%.0f/s, %d version conflicts), %d panel reads (%.0f/s)",
		elapsed.Round(time.Second), r.hives.n, applied, float64(applied)/secs, writes, float64(writes)/secs, r.conflicts, r.reads.Load(), float64(r.reads.Load())/secs)
	t.Logf("commands:%s", r.latencies())
	t.Logf("the panel's stream pushed each of the %d events once", streamed)
}

// run is the bookkeeping of one contention run, shared by every agent.
type run struct {
	t        *testing.T
	w        *clitest.WS
	db       string
	python   string // the interpreter of python3 (clitest.Python3)
	deadline time.Time
	hives    hives
	reads    atomic.Int64 // panel answers read
	walMax   atomic.Int64 // the largest size of PATH-wal seen
	mcpWrote atomic.Bool  // the MCP agent reported a marker written

	mu        sync.Mutex
	markers   map[string]string // task/marker name: who reported writing it
	incs      map[string]int    // task/key: increments reported done
	dones     map[string]string // task/subtask: the agent that reported it done
	conflicts int
	times     map[string][]time.Duration // command: how long each run took
}

func (r *run) took(cmd string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.times == nil {
		r.times = map[string][]time.Duration{}
	}
	r.times[cmd] = append(r.times[cmd], d)
}

// latencies is each command's median and slowest run.
func (r *run) latencies() string {
	var b strings.Builder
	for _, cmd := range slices.Sorted(maps.Keys(r.times)) {
		ds := slices.Clone(r.times[cmd])
		slices.Sort(ds)
		fmt.Fprintf(&b, " %s %d× median %s max %s;", cmd, len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return b.String()
}

func (r *run) marker(who, task, name string) {
	if name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.HasPrefix(who, "mcp_") {
		r.mcpWrote.Store(true)
	}
	key := task + "/" + path.Base(name)
	if prev, ok := r.markers[key]; ok {
		r.t.Errorf("marker %s reported twice, by %s and %s", key, prev, who)
	}
	r.markers[key] = who
}

func (r *run) done(task, sub, agent string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dones[task+"/"+sub] = agent
}

func (r *run) increment(task, key string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.incs[task+"/"+key]++
	} else {
		r.conflicts++
	}
}

// going says whether agents go on: until the deadline, while nothing
// failed.
func (r *run) going(ctx context.Context) bool { return ctx.Err() == nil && !r.t.Failed() }

// mcpGoing is going for the MCP agent, which goes on past the deadline
// until it has reported a marker, for at most mcpGrace more: the checks
// need a marker of every kind of agent, and on a loaded machine the
// MCP agent's first claim, behind an increment and a state read that
// each wait for its server, can come after the deadline.
func (r *run) mcpGoing(ctx context.Context) bool {
	if r.t.Failed() {
		return false
	}
	return ctx.Err() == nil || (!r.mcpWrote.Load() && time.Now().Before(r.deadline.Add(mcpGrace)))
}

// scan fails the test when text shows a busy error.
func (r *run) scan(who, text string) {
	if m := busy.FindString(text); m != "" {
		r.t.Errorf("%s met %q:\n%s", who, m, text)
	}
}

// cli runs one workspaced command and scans what it printed.
func (r *run) cli(stdin string, args ...string) clitest.Result {
	began := time.Now()
	res, err := clitest.Exec(r.w.Dir, r.w.Env, stdin, args...)
	r.took(args[0]+" "+args[1], time.Since(began))
	if err != nil {
		r.t.Error(err)
		return clitest.Result{Code: -1}
	}
	r.scan(fmt.Sprintf("workspaced %q", args), res.Stdout+res.Stderr)
	return res
}

func (r *run) unexpected(args []string, res clitest.Result) {
	r.t.Errorf("workspaced %q: %v", args, res)
}

// hives is the task the agents work on: when it is finished, the first
// agent to see it makes the next one (a plan of hiveSize subtasks,
// proposed and approved, and its counters) while the others wait.
type hives struct {
	r   *run
	mu  sync.Mutex
	n   int
	cur string
}

func (h *hives) current() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// next is the task after finished: made now if finished is current.
func (h *hives) next(finished string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur != finished {
		return h.cur
	}
	r := h.r
	id := fmt.Sprintf("hive_%03d", h.n+1)
	ok := func(stdin string, args ...string) string {
		res := r.cli(stdin, args...)
		if res.Code != 0 {
			r.unexpected(args, res)
		}
		return res.Stdout
	}
	ok("", "task", "create", "--id", id, "--description", "contention round "+id)
	for i := range counterKeys {
		ok("", "env", "store", "--task", id, "--key", counterKey(i), "--description", "a version-checked counter", "--value", "0")
	}
	subs := make([]map[string]string, hiveSize)
	for i := range subs {
		subs[i] = map[string]string{"id": fmt.Sprintf("st_%d", i+1), "description": "piece " + strconv.Itoa(i+1)}
	}
	plan, _ := json.Marshal(map[string]any{"summary": "contention", "subtasks": subs})
	var out struct{ Marker string }
	json.Unmarshal([]byte(ok(string(plan), "plan", "write", "--task", id, "--agent", "orchestrator", "--file", "-", "--propose", "--json")), &out)
	r.marker("orchestrator", id, out.Marker)
	out.Marker = ""
	json.Unmarshal([]byte(ok(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", id, "--id", "plan_v1", "--agent", "reviewer", "--file", "-", "--done", "--json")), &out)
	r.marker("reviewer", id, out.Marker)
	h.n++
	h.cur = id
	return id
}

func counterKey(i int) string { return "counter_" + strconv.Itoa(i) }

// subtaskState is what agents read of a state.
type subtaskState struct {
	Status     string `json:"status"`
	JournalSeq int64  `json:"journal_seq"`
	Subtasks   map[string]struct{ Status, Worker string }
}

func (s subtaskState) finished() bool {
	return s.Status == "completed" || s.Status == "failed" || s.Status == "cancelled"
}

func (s subtaskState) pending() []string {
	var ids []string
	for id, st := range s.Subtasks {
		if st.Status == "pending" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// openDB opens the database read-only for the checks.
func (r *run) openDB() *sql.DB {
	sdb, err := sql.Open("sqlite", "file:"+r.db+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { sdb.Close() })
	return sdb
}

// awaitMarkersTaken waits until the daemon has taken every marker.
func (r *run) awaitMarkersTaken(sdb *sql.DB) {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := sdb.QueryRow("SELECT count(*) FROM markers").Scan(&n); err != nil {
			r.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d markers still waiting 2 minutes after the run", n)
		}
	}
}

// checkJournal checks each task's journal (seq 1..n, each name once) and
// that every marker reported written is in it; it returns how many
// markers were applied.
func (r *run) checkJournal(sdb *sql.DB) int {
	rows, err := sdb.Query("SELECT task_id, seq, name, record FROM journal ORDER BY task_id, seq")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	journaled := map[string]bool{}
	bySource := map[string]int{} // cli, mcp, py, orchestrator, reviewer
	last := map[string]int64{}
	for rows.Next() {
		var task, name, record string
		var seq int64
		if err := rows.Scan(&task, &seq, &name, &record); err != nil {
			r.t.Fatal(err)
		}
		var rec struct {
			Marker struct {
				AgentID string `json:"agent_id"`
			}
		}
		if err := json.Unmarshal([]byte(record), &rec); err != nil {
			r.t.Errorf("%s: journal record %d: %v", task, seq, err)
		}
		kind, _, _ := strings.Cut(rec.Marker.AgentID, "_")
		bySource[kind]++
		if seq != last[task]+1 {
			r.t.Errorf("%s: journal seq %d after %d", task, seq, last[task])
		}
		last[task] = seq
		key := task + "/" + name
		if journaled[key] {
			r.t.Errorf("marker %s journaled twice", key)
		}
		journaled[key] = true
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	missing := 0
	for m, who := range r.markers {
		if !journaled[m] {
			missing++
			r.t.Errorf("marker %s, reported written by %s, is not in the journal", m, who)
		}
	}
	if len(r.markers) == 0 || len(journaled) < len(r.markers) {
		r.t.Errorf("%d markers reported written, %d journaled", len(r.markers), len(journaled))
	}
	for _, kind := range []string{"cli", "mcp", "py"} {
		if bySource[kind] == 0 {
			r.t.Errorf("no marker of a %s agent was journaled: %v", kind, bySource)
		}
	}
	r.t.Logf("markers journaled by agent: %v", bySource)
	return len(journaled)
}

// checkStates checks each task's state: valid against its schema, at
// the journal's last seq, what `state rebuild` and the panel fold from
// the journal, and every subtask an agent reported done completed by it.
func (r *run) checkStates(sdb *sql.DB, panel string) {
	rows, err := sdb.Query("SELECT s.task_id, s.journal_seq, s.doc, (SELECT max(seq) FROM journal j WHERE j.task_id = s.task_id) FROM states s ORDER BY s.task_id")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var task, doc string
		var seq int64
		var last sql.NullInt64
		if err := rows.Scan(&task, &seq, &doc, &last); err != nil {
			r.t.Fatal(err)
		}
		n++
		if err := schemas.Validate(schemas.KindState, []byte(doc)); err != nil {
			r.t.Errorf("%s: state invalid: %v", task, err)
		}
		var st subtaskState
		if err := json.Unmarshal([]byte(doc), &st); err != nil {
			r.t.Fatalf("%s: %v", task, err)
		}
		if st.JournalSeq != seq || seq != last.Int64 {
			r.t.Errorf("%s: state at journal_seq %d (column %d), journal at %d", task, st.JournalSeq, seq, last.Int64)
		}
		args := []string{"state", "rebuild", "--task", task}
		if res := r.cli("", args...); res.Code != 0 || !strings.Contains(res.Stdout, "matches") {
			r.unexpected(args, res)
		}
		body, ok := r.get(panel + "/api/tasks/" + task + "/state")
		var fold struct{ State subtaskState }
		if !ok || json.Unmarshal(body, &fold) != nil {
			continue
		}
		if fold.State.Status != st.Status || !mapsEqual(fold.State.Subtasks, st.Subtasks) {
			r.t.Errorf("%s: the state is not the fold of its journal:\nstate %+v\nfold  %+v", task, st, fold.State)
		}
		for sub, s := range st.Subtasks {
			if agent, ok := r.dones[task+"/"+sub]; ok && (s.Status != "completed" || s.Worker != agent) {
				r.t.Errorf("%s: %s reported %s done, the state has it %s by %q", task, agent, sub, s.Status, s.Worker)
			}
		}
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	if n != r.hives.n {
		r.t.Errorf("%d states for %d tasks", n, r.hives.n)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkCounters checks that every counter stands at the increments
// reported (none lost, none twice) and returns the entry writes made.
func (r *run) checkCounters(sdb *sql.DB) int {
	rows, err := sdb.Query("SELECT owner, key, version, value FROM entries WHERE scope = 'thread' AND key LIKE 'counter_%'")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	writes, n := 0, 0
	for rows.Next() {
		var task, key, value string
		var version int
		if err := rows.Scan(&task, &key, &version, &value); err != nil {
			r.t.Fatal(err)
		}
		n++
		want := r.incs[task+"/"+key]
		if value != strconv.Itoa(want) || version != want+1 {
			r.t.Errorf("%s %s is %s at version %d; %d increments were reported", task, key, value, version, want)
		}
		writes += version
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	if n != r.hives.n*counterKeys || writes == n {
		r.t.Errorf("%d counters written %d times, for %d tasks", n, writes, r.hives.n)
	}
	return writes
}

// checkDatabase runs integrity_check and measures the WAL while every
// connection is still open (the last to close removes it); the panel's
// readers measured it throughout the run.
func (r *run) checkDatabase(sdb *sql.DB) {
	var res string
	if err := sdb.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		r.t.Errorf("integrity_check: %q %v", res, err)
	}
	end := r.sampleWAL()
	if end < 0 {
		r.t.Fatal("no WAL beside the database while it is open")
	}
	if end >= walLimit || r.walMax.Load() >= walLimit {
		r.t.Errorf("the WAL is %d MiB at the end, at most %d MiB during the run: over %d MiB", end>>20, r.walMax.Load()>>20, walLimit>>20)
	}
	r.t.Logf("WAL %.1f MiB at the end, at most %.1f MiB during the run; %d CPUs", float64(end)/(1<<20), float64(r.walMax.Load())/(1<<20), runtime.NumCPU())
}

// sampleWAL notes the WAL's size now (-1 when there is none) in walMax.
func (r *run) sampleWAL() int64 {
	fi, err := os.Stat(r.db + "-wal")
	if err != nil {
		return -1
	}
	for {
		m := r.walMax.Load()
		if fi.Size() <= m || r.walMax.CompareAndSwap(m, fi.Size()) {
			return fi.Size()
		}
	}
}
