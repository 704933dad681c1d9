package torture_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// The daemon under SIGKILL at random moments while agents drop markers,
// one at a time and in bursts: every marker applied exactly once, every
// state.json valid at every kill.

// TestServeCrashExactlyOnce drives 480 claim and done markers (2,000 at
// the long sizes, see clitest.LongEnv) across four tasks while killing the
// daemon with SIGKILL at 15 random moments (25 long), and checks that
// every state.json always validates and that every marker is applied
// exactly once.
func TestServeCrashExactlyOnce(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	if testing.Short() {
		t.Skip("crash test: long")
	}
	// 60 subtasks a task (250 long), a claim and a done each: 480
	// markers (2,000), one agent a task.
	crashExactlyOnce(t, 4, sized(t, 60, 250), 1, sized(t, 15, 25))
}

// TestServeCrashBursts is TestServeCrashExactlyOnce with 32 agents a task
// finishing at once: the daemon then journals several chunks of a burst
// before it writes the state that reflects them, and a SIGKILL lands
// between the journal and the state write, or between two chunks.
func TestServeCrashBursts(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	if testing.Short() {
		t.Skip("crash test: long")
	}
	crashExactlyOnce(t, 2, sized(t, 64, 320), 32, sized(t, 15, 25))
}

// TestServeCrashPoll is TestServeCrashExactlyOnce with the daemon woken
// by the poll source, the default where there is no inotify.
func TestServeCrashPoll(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	if testing.Short() {
		t.Skip("crash test: long")
	}
	crashExactlyOnce(t, 2, sized(t, 72, 120), 4, sized(t, 12, 20), "--wakeups", "poll", "--poll", "20ms")
}

// crashExactlyOnce has agents agents a task (each its share of the
// subtasks, one after another) drop a claim and a done marker for every
// subtask of tasks tasks while the daemon is SIGKILLed kills times at
// random moments, and checks that every state.json always validates, that
// every marker is applied exactly once and that every event of its record
// is logged once, in order.
func crashExactlyOnce(t *testing.T, tasks, subtasks, agents, kills int, serveArgs ...string) {
	w := clitest.NewDir(t)
	x := w.Open()
	srv := start(w, serveArgs...)
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("crash%d", i)
		clitest.ExecutingTask(t, x, ids[i], subtasks)
	}
	for _, id := range ids {
		for s := 1; s <= subtasks; s++ {
			if _, err := x.WriteOutput(t.Context(), id, fmt.Sprintf("st_%d", s), "w", []byte(`{"summary":"done"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}

	var (
		mu      sync.Mutex
		dropped = map[string]map[string]bool{} // task → marker names
	)
	for _, id := range ids {
		dropped[id] = map[string]bool{}
	}
	var wg sync.WaitGroup
	errc := make(chan error, tasks*agents)
	for _, id := range ids {
		for a := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := 1 + a; s <= subtasks; s += agents {
					sub, agent := fmt.Sprintf("st_%d", s), fmt.Sprintf("worker_%d", (s-1)%max(agents, 7))
					c, err := x.WriteClaim(t.Context(), id, agent, sub)
					if err != nil {
						errc <- err
						return
					}
					d, err := x.WriteDone(t.Context(), workspace.DoneRequest{TaskID: id, Agent: agent, OutputFile: "outputs/" + sub + ".json", SubtaskID: sub})
					if err != nil {
						errc <- err
						return
					}
					mu.Lock()
					dropped[id][filepath.Base(c)] = true
					dropped[id][filepath.Base(d)] = true
					mu.Unlock()
				}
			}()
		}
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(5+rng.IntN(150)) * time.Millisecond) // a random moment, not a wait for a condition
		if !srv.Running() {
			t.Fatalf("daemon exited by itself:\n%s", srv.Log)
		}
		srv.Kill()
		clitest.CheckStates(t, x, ids)
		srv = start(w, serveArgs...)
	}
	<-writersDone
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	states := map[string]workspace.State{}
	for _, id := range ids {
		states[id] = clitest.StateWhere(t, x, id, func(st workspace.State) bool { return st.Status == "completed" })
	}
	// The last daemon may have just been started: a SIGTERM before it
	// installs its handler would kill it, not stop it; and the taken
	// markers its killed elders left are settled when it loads their task,
	// in its start-up scan.
	w.AwaitLead(srv)
	w.AwaitServing()
	srv.Stop() // a clean stop settles the journal
	for _, id := range ids {
		st := states[id]
		if len(st.Errors) > 0 {
			t.Errorf("task %s: errors in state: %+v", id, st.Errors[0])
		}
		for sid, ss := range st.Subtasks {
			if ss.Status != "completed" || ss.Attempts != 1 {
				t.Errorf("task %s: subtask %s is %s after %d attempts, want completed after 1", id, sid, ss.Status, ss.Attempts)
			}
		}
		recs := clitest.CheckJournal(t, x, id)
		if want := 2 + 2*subtasks; len(recs) != want || st.JournalSeq != int64(want) {
			t.Errorf("task %s: %d records, journal_seq %d; want %d", id, len(recs), st.JournalSeq, want)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			seen[r.File] = true
			if r.Rejected != "" {
				t.Errorf("task %s: record %d rejected: %s", id, r.Seq, r.Rejected)
			}
		}
		for name := range dropped[id] {
			if !seen[name] {
				t.Errorf("task %s: marker %s never journaled", id, name)
			}
		}
		if out := w.Ok("state", "rebuild", "--task", id); !strings.Contains(out, "matches") {
			t.Errorf("task %s: rebuild differs:\n%s", id, out)
		}
		clitest.CheckEventsOnce(t, x, id)
	}
}
