package torture_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestServeCrashEventsOnce: agents finish the subtasks of a task in
// bursts while the daemon is SIGKILLed at random moments, some between
// the events of a commit and its state: after a restart every event of
// every journal record is in events.log, exactly once, in order.
func TestServeCrashEventsOnce(t *testing.T) {
	t.Parallel() // long, and independent of the others: overlapping them keeps the package short
	if testing.Short() {
		t.Skip("crash test: long")
	}
	const agents = 16
	subtasks, kills := sized(t, 96, 240), sized(t, 18, 30)
	w := clitest.NewDir(t)
	x := w.Open()
	srv := start(w)
	clitest.ExecutingTask(t, x, "t1", subtasks)
	for s := 1; s <= subtasks; s++ {
		if _, err := x.WriteOutput(context.Background(), "t1", fmt.Sprintf("st_%d", s), "w", []byte(`{"summary":"done"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, agents)
	for a := range agents {
		wg.Go(func() {
			for s := 1 + a; s <= subtasks; s += agents {
				sub, agent := fmt.Sprintf("st_%d", s), fmt.Sprintf("worker_%d", a)
				if _, err := x.WriteClaim(context.Background(), "t1", agent, sub); err != nil {
					errc <- err
					return
				}
				if _, err := x.WriteDone(context.Background(), workspace.DoneRequest{TaskID: "t1", Agent: agent, OutputFile: "outputs/" + sub + ".json", SubtaskID: sub}); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()
	rng := rand.New(rand.NewPCG(3, 4))
	for range kills {
		time.Sleep(time.Duration(2+rng.IntN(60)) * time.Millisecond) // a random moment, not a wait for a condition
		if !srv.Running() {
			t.Fatalf("daemon exited by itself:\n%s", srv.Log)
		}
		srv.Kill()
		clitest.CheckStates(t, x, []string{"t1"})
		srv = start(w)
	}
	<-writersDone
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Status == "completed" })
	// The last daemon may have just been started: a SIGTERM before it
	// installs its handler would kill it, not stop it; and the taken
	// markers its killed elders left are settled when it loads the task,
	// in its start-up scan.
	w.AwaitLead(srv)
	w.AwaitServing()
	srv.Stop()
	clitest.CheckJournal(t, x, "t1")
	recs, evs := clitest.CheckEventsOnce(t, x, "t1")
	if want := 2 + 2*subtasks; recs != want {
		t.Errorf("%d records, want %d", recs, want)
	}
	t.Logf("%d kills; checked %d records, %d events", kills, recs, evs)
}

// TestServeRefusesReusedMarkerName: a marker dropped under a name the
// journal already holds is removed without a record, and the refusal is
// in events.log for the agent to read.
func TestServeRefusesReusedMarkerName(t *testing.T) {
	w := clitest.NewDir(t)
	x := w.Open()
	srv := start(w)
	clitest.ExecutingTask(t, x, "t1", 3)
	const name = ".claim.w1.reused"
	td := filepath.Join(w.Root, "tasks", "t1")
	for i, sub := range []string{"st_1", "st_2"} {
		body := fmt.Sprintf(`{"agent_id": "w1", "subtask_id": %q, "claimed_at": "2024-01-15T10:00:00.000Z"}`+"\n", sub)
		tmp := filepath.Join(td, ".tmp-reused")
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(td, name)); err != nil {
			t.Fatal(err)
		}
		clitest.Eventually(t, "the marker taken or refused", func() (bool, string) {
			_, err := os.Lstat(filepath.Join(td, name))
			return os.IsNotExist(err), fmt.Sprint(err)
		})
		if i == 0 {
			clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == 3 })
		}
	}
	out := w.Ok("events", "--task", "t1")
	if !strings.Contains(out, "marker_refused t1 st_2 agent=w1 file="+name+" journaled=3 reason=") {
		t.Errorf("no refusal of the reused name in the events:\n%s", out)
	}
	srv.Stop()
	recs := clitest.CheckJournal(t, x, "t1")
	if len(recs) != 3 {
		t.Errorf("%d records, want 3: the reused name journaled again", len(recs))
	}
	if st, _ := x.ReadState(context.Background(), "t1"); st.Subtasks["st_2"].Status != "pending" {
		t.Errorf("st_2 is %s, want pending: the refused claim applied", st.Subtasks["st_2"].Status)
	}
	if !strings.Contains(srv.Log.String(), "marker name already journaled") {
		t.Errorf("the refusal is not logged:\n%s", srv.Log)
	}
	clitest.CheckEventsOnce(t, x, "t1")
}
