package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/machine"
)

// checkEventsOnce checks that task id's events.log holds every event its
// journal makes, exactly once and in order: the journal replayed by the
// state machine from the task's first state gives the events every
// commit must have logged (lines of other events, an agent's env_stored
// say, may sit between them). It returns how many records and events it
// counted.
func checkEventsOnce(t *testing.T, x *workspace.Workspace, id string) (records, events int) {
	t.Helper()
	task, err := x.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := files.ReadJournal(x, id)
	if err != nil {
		t.Fatal(err)
	}
	plans := func(version int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d in the journal", version)
	}
	_, evs, err := machine.Continue(machine.Init(task), plans, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(evs))
	wanted := map[string]int{}
	for i, e := range evs {
		want[i] = workspace.FormatEvent(e)
		wanted[want[i]]++
	}
	logged, bad, err := x.ReadEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	seen := map[string]int{}
	for _, e := range logged {
		if l := workspace.FormatEvent(e); wanted[l] > 0 {
			got = append(got, l)
			seen[l]++
		}
	}
	missing, twice := 0, 0
	for l, n := range wanted {
		missing += max(n-seen[l], 0)
		twice += max(seen[l]-n, 0)
	}
	if missing > 0 || twice > 0 || !slices.Equal(got, want) {
		t.Errorf("task %s: of the %d events of its %d records, %d missing from events.log and %d logged more than once (in order: %v)",
			id, len(want), len(recs), missing, twice, slices.Equal(got, want))
		for i := range max(len(got), len(want)) {
			g, w := "-", "-"
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("first difference at event %d:\n  logged %s\n  want   %s", i+1, g, w)
				break
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("task %s: %d lines of events.log do not parse: %v", id, len(bad), bad[0])
	}
	return len(recs), len(want)
}

// TestServeCrashEventsOnce: agents finish the subtasks of a task in
// bursts while the daemon is SIGKILLed at random moments, some between
// the events of a commit and its state: after a restart every event of
// every journal record is in events.log, exactly once, in order.
func TestServeCrashEventsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: long")
	}
	const (
		subtasks = 240
		agents   = 16
		kills    = 30
	)
	w := newWS(t)
	x := w.open()
	srv := w.serve()
	executingTask(t, x, "t1", subtasks)
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
		if !srv.running() {
			t.Fatalf("daemon exited by itself:\n%s", srv.stderr)
		}
		srv.kill()
		checkStates(t, x, []string{"t1"})
		srv = w.serve()
	}
	<-writersDone
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	stateWhere(t, x, "t1", func(st workspace.State) bool { return st.Status == "completed" })
	srv.stop()
	checkJournal(t, x, "t1")
	recs, evs := checkEventsOnce(t, x, "t1")
	if want := 2 + 2*subtasks; recs != want {
		t.Errorf("%d records, want %d", recs, want)
	}
	t.Logf("%d kills; checked %d records, %d events", kills, recs, evs)
}

// TestServeRefusesReusedMarkerName: a marker dropped under a name the
// journal already holds is removed without a record, and the refusal is
// in events.log for the agent to read.
func TestServeRefusesReusedMarkerName(t *testing.T) {
	w := newWS(t)
	x := w.open()
	srv := w.serve()
	executingTask(t, x, "t1", 3)
	const name = ".claim.w1.reused"
	td := filepath.Join(w.root, "tasks", "t1")
	for i, sub := range []string{"st_1", "st_2"} {
		body := fmt.Sprintf(`{"agent_id": "w1", "subtask_id": %q, "claimed_at": "2024-01-15T10:00:00.000Z"}`+"\n", sub)
		tmp := filepath.Join(td, ".tmp-reused")
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(td, name)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the marker taken or refused", func() (bool, string) {
			_, err := os.Lstat(filepath.Join(td, name))
			return os.IsNotExist(err), fmt.Sprint(err)
		})
		if i == 0 {
			stateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == 3 })
		}
	}
	out := w.ok("events", "--task", "t1")
	if !strings.Contains(out, "marker_refused t1 st_2 agent=w1 file="+name+" journaled=3 reason=") {
		t.Errorf("no refusal of the reused name in the events:\n%s", out)
	}
	srv.stop()
	recs := checkJournal(t, x, "t1")
	if len(recs) != 3 {
		t.Errorf("%d records, want 3: the reused name journaled again", len(recs))
	}
	if st, _ := x.ReadState(context.Background(), "t1"); st.Subtasks["st_2"].Status != "pending" {
		t.Errorf("st_2 is %s, want pending: the refused claim applied", st.Subtasks["st_2"].Status)
	}
	if !strings.Contains(srv.stderr.String(), "marker name already journaled") {
		t.Errorf("the refusal is not logged:\n%s", srv.stderr)
	}
	checkEventsOnce(t, x, "t1")
}
