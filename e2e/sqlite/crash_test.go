package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// openStore opens the workspace at root in the test process, as an agent
// library would.
func openStore(t *testing.T, root string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// prepare creates task id with a plan of n independent subtasks (st_1 …
// st_n) and drops the planner's and the reviewer's done markers that take
// it to executing once a daemon applies them (in that order). It returns
// the subtasks' ids.
func prepare(t *testing.T, s *sqlite.Store, id string, n int) []string {
	t.Helper()
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "task " + id, SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	subs := make([]string, n)
	items := make([]map[string]any, n)
	for i := range subs {
		subs[i] = fmt.Sprintf("st_%d", i+1)
		items[i] = map[string]any{"id": subs[i], "description": "subtask " + subs[i]}
	}
	plan, _ := json.Marshal(map[string]any{"summary": "plan of " + id, "subtasks": items})
	if _, err := s.WritePlan(ctx, id, "planner", plan); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteDone(ctx, workspace.DoneRequest{TaskID: id, Agent: "planner", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	rel, err := s.WriteReview(ctx, id, "plan_review_1", "reviewer", []byte(`{"type": "plan_review", "verdict": "approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteDone(ctx, workspace.DoneRequest{TaskID: id, Agent: "reviewer", OutputFile: rel}); err != nil {
		t.Fatal(err)
	}
	return subs
}

// journaled counts the journal rows of all tasks.
func journaled(t *testing.T, s *sqlite.Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), "SELECT count(*) FROM journal").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCrashExactlyOnce: four agent processes (`workspaced mcp`, each
// claiming and finishing the 32 subtasks of its task's plan: 256
// markers, each claim waited for until the daemon decides it; 125
// subtasks and 1,000 markers at the long sizes, see clitest.LongEnv) run
// while the daemon and the agents are SIGKILLed 12 times (24 at the long
// sizes), each daemon at a random moment once it has committed something. After every kill the
// database passes integrity_check, every state validates and equals its
// journal folded by the machine, no marker name is journaled twice and
// every marker an agent reported written is journaled or still waiting. A
// killed agent is started again on the subtasks it had not reported done.
// At the end every subtask is completed, every marker written is
// journaled once, every event of every record is logged once, in order,
// and `workspaced state rebuild` matches every state.
func TestCrashExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the crash test runs for several seconds")
	}
	const tasks = 4 // one agent each
	// Each daemon is killed once it has committed between 1 and most
	// markers: kills × most stays under the 2 × tasks × subtasks markers
	// written, so that every kill lands while the agents write.
	subtasks, most, kills := clitest.Sized(t, 32, 125), clitest.Sized(t, 20, 40), clitest.Sized(t, 12, 24)
	begin := time.Now()
	w, _ := clitest.NewSQLite(t)
	s := openStore(t, w.Root)
	ids := make([]string, tasks)
	subs := make([][]string, tasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("crash%d", i)
		subs[i] = prepare(t, s, ids[i], subtasks)
	}
	wrote := newWritten()
	procs := make([]*mcpAgent, tasks)
	start := func(i int) {
		procs[i] = startAgent(t, w, s, ids[i], fmt.Sprintf("worker_%d", i), wrote.left(ids[i], subs[i]), wrote)
	}
	for i := range procs {
		start(i)
	}
	running := func() []int {
		var r []int
		for i, p := range procs {
			if p.running() {
				r = append(r, i)
			}
		}
		return r
	}
	checks := make([]*taskCheck, tasks)
	for i, id := range ids {
		checks[i] = newTaskCheck(id)
	}
	check := func() {
		t.Helper()
		integrity(t, s)
		names := wrote.snapshot()
		for i, id := range ids {
			checkWritten(t, s, id, checks[i].check(t, s), names)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	killed, agentKills, midBurst := 0, 0, 0
	for killed < kills {
		d := w.Serve()
		before, more := journaled(t, s), 1+rng.IntN(most)
		// Killed once it has committed a random number of markers since
		// it started, at a random moment after: however busy the machine,
		// every daemon killed while the agents run is killed mid-burst,
		// and the kills spread over the burst.
		eventually(t, "the daemon to commit", func() (bool, string) {
			n := journaled(t, s)
			return n >= before+more || len(running()) == 0, fmt.Sprintf("%d journal rows, %d at its start; daemon log:\n%s", n, before, d.Log)
		})
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond) // a random moment, not a wait for a condition
		d.Kill()
		killed++
		if r := running(); len(r) > 0 {
			midBurst++
			i := r[rng.IntN(len(r))]
			procs[i].kill()
			agentKills++
			start(i)
		}
		for i, p := range procs {
			if !p.running() && p.err != nil {
				t.Fatalf("agent of %s: %v\n%s", ids[i], p.err, p.log.String())
			}
		}
		if strings.Contains(d.Log.String(), "panic") {
			t.Fatalf("the daemon panicked:\n%s", d.Log)
		}
		check()
	}
	burst := len(wrote.snapshot())
	d := w.Serve()
	for _, p := range procs {
		<-p.done
		if p.err != nil {
			t.Fatalf("agent: %v\n%s", p.err, p.log.String())
		}
	}
	eventually(t, "every task completed, no marker waiting", func() (bool, string) {
		var n int
		if err := s.DB().QueryRowContext(t.Context(), "SELECT count(*) FROM markers").Scan(&n); err != nil || n > 0 {
			return false, fmt.Sprintf("%d markers waiting (%v)", n, err)
		}
		for _, id := range ids {
			if st, err := s.ReadState(t.Context(), id); err != nil || st.Status != "completed" {
				return false, fmt.Sprintf("task %s %s (%v)", id, st.Status, err)
			}
		}
		return true, ""
	})
	d.Kill()
	check()
	all := wrote.snapshot()
	records, events := 0, 0
	for i, id := range ids {
		recs := checks[i].check(t, s)
		st, err := s.ReadState(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range subs[i] {
			if ss := st.Subtasks[sub]; ss == nil || ss.Status != machine.SubtaskCompleted {
				t.Fatalf("task %s: subtask %s: %+v, want completed", id, sub, ss)
			}
		}
		records += len(recs)
		events += clitest.CheckJournalEvents(t, s, id, recs)
		want := fmt.Sprintf("state.json matches the journal (journal_seq %d)", st.JournalSeq)
		if out := w.Ok("state", "rebuild", "--task", id); !strings.Contains(out, want) {
			t.Fatalf("task %s: state rebuild: %s", id, out)
		}
	}
	if len(all) < 2*tasks*subtasks {
		t.Fatalf("the agents reported %d markers, want at least %d", len(all), 2*tasks*subtasks)
	}
	if midBurst < kills-2 {
		t.Fatalf("of %d daemon kills, %d while the agents wrote: the kills did not land mid-burst", killed, midBurst)
	}
	t.Logf("%d daemon kills (%d mid-burst, %d markers written by then), %d agent kills; %d markers written, %d journaled, %d events; %v",
		killed, midBurst, burst, agentKills, len(all), records, events, time.Since(begin).Round(time.Millisecond))
}
