package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// counted is the store a part of the suite works on: the served store,
// counting the markers dropped in each task so that Apply knows when the
// daemon has taken them all.
type counted struct {
	workspace.Served
	mu      sync.Mutex
	dropped map[string]int
	// daemon serves the store, started with opt.
	daemon *servetest.Daemon
	opt    servetest.Options
}

func (c *counted) note(task string, err error) {
	if err == nil {
		c.mu.Lock()
		c.dropped[task]++
		c.mu.Unlock()
	}
}

func (c *counted) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	m, err := c.Served.WriteClaim(ctx, taskID, agent, subtaskID)
	c.note(taskID, err)
	return m, err
}

func (c *counted) WriteDone(ctx context.Context, req workspace.DoneRequest) (string, error) {
	m, err := c.Served.WriteDone(ctx, req)
	c.note(req.TaskID, err)
	return m, err
}

// Unwrap is the store under the counting (workspace.Unwrapper): what it
// offers beyond Served, workspace.As finds there.
func (c *counted) Unwrap() workspace.Store { return c.Served }

// awaitApplied returns once every marker the suite dropped in s is
// journaled and the state of its task reflects it.
func awaitApplied(t *testing.T, s workspace.Store) {
	t.Helper()
	c := s.(*counted)
	c.mu.Lock()
	want := maps(c.dropped)
	c.mu.Unlock()
	for task, n := range want {
		await(t, "the daemon applies the markers of "+task, func() (bool, string) {
			recs, err := s.ReadJournal(t.Context(), task)
			if err != nil {
				return false, err.Error()
			}
			if len(recs) < n {
				return false, fmt.Sprintf("%d of %d journaled", len(recs), n)
			}
			st, err := s.ReadState(t.Context(), task)
			if err != nil {
				return false, err.Error()
			}
			last := recs[len(recs)-1].Seq
			return st.JournalSeq >= last, fmt.Sprintf("state at %d, journal at %d", st.JournalSeq, last)
		})
	}
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// await is poll.Until with the minute a served store may take.
func await(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, time.Minute, what, cond)
}

// awaitState waits for the state of task id to satisfy cond.
func awaitState(t *testing.T, s workspace.Store, id string, cond func(workspace.State) bool) workspace.State {
	t.Helper()
	return poll.State(t, time.Minute, s, id, cond)
}

// verdictOf is the verdict on the marker m (a name the store gave back),
// from its journal record and the state.
func verdictOf(t *testing.T, s workspace.Store, task, m string) workspace.Verdict {
	t.Helper()
	name := path.Base(m)
	recs, err := s.ReadJournal(t.Context(), task)
	ok(t, err, "read journal")
	st, err := s.ReadState(t.Context(), task)
	ok(t, err, "read state")
	var found []workspace.JournalRecord
	for _, r := range recs {
		if r.File == name {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("marker %s is journaled %d times, want once", name, len(found))
	}
	return machine.Judge(st, found[0], name)
}

// testServed plays what the daemon promises on every store: a new task's
// first state; a plan proposed, sent back and proposed again, then
// approved; a claim won and one refused with its reason; a done with a
// product and one without (a cancellation); and the events of every
// commit present exactly once, in order.
func testServed(t *testing.T, s workspace.Store, h Hooks) {
	newTask(t, s, "t1")
	first := awaitState(t, s, "t1", func(workspace.State) bool { return true })
	if first.Status != "planning" || first.PlanStatus != machine.PlanNone {
		t.Fatalf("first state %+v, want planning with no plan", first)
	}
	review := func(verdict string, n int) {
		rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": verdict, "issues": []map[string]any{{"problem": "p"}}})
		rel, err := s.WriteReview(t.Context(), "t1", fmt.Sprintf("plan_review_%d", n), "reviewer", rv)
		ok(t, err, "write review")
		_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
		ok(t, err, "done review")
		h.Apply(t, s)
	}
	propose := func(subtasks ...string) {
		_, err := s.WritePlan(bg, "t1", "planner", planJSON(subtasks...))
		ok(t, err, "write plan")
		_, err = s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"})
		ok(t, err, "done plan")
		h.Apply(t, s)
	}
	propose("s1")
	if st, _ := s.ReadState(t.Context(), "t1"); st.PlanStatus != machine.PlanProposed || st.PlanVersion != 1 {
		t.Fatalf("after a plan: plan_status %s v%d, want proposed v1", st.PlanStatus, st.PlanVersion)
	}
	review("revision_needed", 1)
	if st, _ := s.ReadState(t.Context(), "t1"); st.RevisionCount != 1 || st.PlanStatus == machine.PlanApproved {
		t.Fatalf("after a plan sent back: revision_count %d, plan_status %s", st.RevisionCount, st.PlanStatus)
	}
	propose("s1", "s2")
	review("approved", 2)
	st, _ := s.ReadState(t.Context(), "t1")
	if st.Status != "executing" || st.PlanVersion != 2 || len(st.Subtasks) != 2 {
		t.Fatalf("after the second plan was approved: %s v%d with %d subtasks", st.Status, st.PlanVersion, len(st.Subtasks))
	}

	won, err := s.WriteClaim(t.Context(), "t1", "worker_1", "s1")
	ok(t, err, "claim s1")
	lost, err := s.WriteClaim(t.Context(), "t1", "worker_2", "s1")
	ok(t, err, "claim s1 again")
	missing, err := s.WriteClaim(t.Context(), "t1", "worker_2", "s9")
	ok(t, err, "claim a subtask the plan lacks")
	h.Apply(t, s)
	if v := verdictOf(t, s, "t1", won); v.Verdict != workspace.VerdictWon {
		t.Fatalf("first claim: %+v, want won", v)
	}
	if v := verdictOf(t, s, "t1", lost); v.Verdict != workspace.VerdictLost || !strings.Contains(v.Reason, "worker_1") {
		t.Fatalf("second claim: %+v, want lost to worker_1", v)
	}
	if v := verdictOf(t, s, "t1", missing); v.Verdict != workspace.VerdictNotFound || v.Reason == "" {
		t.Fatalf("claim of a missing subtask: %+v, want not_found with a reason", v)
	}
	out, _ := json.Marshal(map[string]any{"status": "completed", "summary": "done"})
	rel, err := s.WriteOutput(t.Context(), "t1", "s1", "worker_1", out)
	ok(t, err, "write output")
	done, err := s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: rel})
	ok(t, err, "done s1")
	h.Apply(t, s)
	if v := verdictOf(t, s, "t1", done); v.Verdict != workspace.VerdictApplied || v.SubtaskStatus != "completed" {
		t.Fatalf("done s1: %+v, want applied, completed", v)
	}
	cancel, err := s.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "coordinator", Status: "cancelled", Error: "no longer needed"})
	ok(t, err, "cancel without a product")
	h.Apply(t, s)
	if v := verdictOf(t, s, "t1", cancel); v.Verdict != workspace.VerdictApplied || v.TaskStatus != "cancelled" {
		t.Fatalf("cancel: %+v, want applied, the task cancelled", v)
	}
	eventsOnce(t, s, "t1")
}

// eventsOnce checks that the task's events hold every event its journal
// makes, exactly once and in order: the journal replayed by the state
// machine gives the events the daemon must have made durable with each
// commit.
func eventsOnce(t *testing.T, s workspace.Store, id string) {
	t.Helper()
	task, err := s.GetTask(t.Context(), id)
	ok(t, err, "get task")
	recs, err := s.ReadJournal(t.Context(), id)
	ok(t, err, "read journal")
	plans := func(version int) (*workspace.Plan, error) {
		for _, r := range slices.Backward(recs) {
			if r.Plan != nil && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("no plan v%d in the journal", version)
	}
	_, want, stopped := machine.Continue(machine.Init(task), plans, recs)
	ok(t, stopped, "replay the journal")
	names := map[string]bool{}
	for _, e := range want {
		names[e.Name] = true
	}
	evs, _, err := s.ReadEvents(t.Context(), id)
	ok(t, err, "read events")
	var got []string
	for _, e := range evs {
		if names[e.Name] {
			got = append(got, workspace.FormatEvent(e))
		}
	}
	var wantLines []string
	for _, e := range want {
		wantLines = append(wantLines, workspace.FormatEvent(e))
	}
	if !slices.Equal(got, wantLines) {
		t.Fatalf("events of the commits:\n%s\nwant, once each and in order:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
}

// testReusedName drops a claim, lets the daemon take it, and drops
// another claim under the same name: the store refuses it at once
// (ErrConflict), or the daemon refuses it without a record, saying so in
// a marker_refused event. Either way the journal holds the name once, the
// second claim changes nothing, and the store's verdict reader answers
// at once for it: refused, the name journaled as the first claim's seq.
func testReusedName(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1", "s2")
	nm, isNamed := workspace.As[workspace.NamedMarkers](s)
	if !isNamed {
		t.Fatal("the store drops no marker under a name of the caller's choosing (workspace.NamedMarkers)")
	}
	const name = ".claim.worker_1.reused-1"
	ok(t, nm.DropNamedMarker(bg, "t1", workspace.KindClaim, name, workspace.Marker{AgentID: "worker_1", SubtaskID: "s1"}), "drop a named claim")
	journaled := func() int {
		recs, err := s.ReadJournal(bg, "t1")
		ok(t, err, "read journal")
		n := 0
		for _, r := range recs {
			if r.File == name {
				n++
			}
		}
		return n
	}
	await(t, "the named claim journaled", func() (bool, string) { return journaled() == 1, "" })
	first := verdictOf(t, s, "t1", name).Seq
	after := awaitState(t, s, "t1", func(st workspace.State) bool { return st.JournalSeq >= first }).JournalSeq
	err := nm.DropNamedMarker(bg, "t1", workspace.KindClaim, name, workspace.Marker{AgentID: "worker_1", SubtaskID: "s2"})
	if err != nil {
		is(t, err, workspace.ErrConflict, "drop a claim under a name already journaled")
	} else {
		await(t, "the reused name refused in the events", func() (bool, string) {
			evs, _, err := s.ReadEvents(bg, "t1")
			ok(t, err, "read events")
			for _, e := range evs {
				if e.Name == machine.EventMarkerRefused && e.Attrs["file"] == name {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs))
		})
	}
	if n := journaled(); n != 1 {
		t.Fatalf("the name is journaled %d times, want once", n)
	}
	reusedVerdict(t, s, name, after, first)
	st, err := s.ReadState(bg, "t1")
	ok(t, err, "read state")
	if sub := st.Subtasks["s2"]; sub == nil || sub.Status != "pending" {
		t.Fatalf("s2 after a claim under a reused name: %+v, want it still pending", sub)
	}
}

// reusedVerdict checks what the store's verdict reader says of a claim
// named name dropped past after, the name journaled as seq first: refused
// for the reused name, never missing (which Wait would report as an
// ErrNotFound after a while) nor undecided.
func reusedVerdict(t *testing.T, s workspace.Store, name string, after, first int64) {
	t.Helper()
	src, isSource := workspace.As[workspace.VerdictSource](s)
	if !isSource {
		t.Fatal("the store reads no verdicts (workspace.VerdictSource)")
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	v, err := workspace.Wait(ctx, src, "t1", name, after)
	ok(t, err, "wait for the verdict on a claim under a reused name")
	want := fmt.Sprintf("journaled as seq %d", first)
	if v.Verdict != workspace.VerdictRefused || v.Journaled != first || v.Seq != 0 || v.Kind != workspace.KindClaim ||
		v.Marker != name || !strings.Contains(v.Reason, want) || !strings.Contains(v.Reason, "fresh name") {
		t.Fatalf("verdict on a claim under a reused name: %+v; want refused, journaled %d, a reason saying %q and to use a fresh name", v, first, want)
	}
}

// testDaemonFriction: a plan sent back twice (the default revision_limit
// is 2) makes the daemon's friction detectors record a repeated_revision,
// announced in the task's events.
func testDaemonFriction(t *testing.T, s workspace.Store, h Hooks) {
	newTask(t, s, "t1")
	plan := planJSON("a", "b")
	for i := 1; i <= 2; i++ {
		_, err := s.WritePlan(bg, "t1", "planner", plan)
		ok(t, err, "write plan")
		_, err = s.WriteDone(bg, workspace.DoneRequest{TaskID: "t1", Agent: "planner", OutputFile: "plan.json"})
		ok(t, err, "done plan")
		h.Apply(t, s)
		rv, _ := json.Marshal(map[string]any{"type": "plan_review", "verdict": "revision_needed", "issues": []map[string]any{{"problem": "missing tests"}}})
		rel, err := s.WriteReview(bg, "t1", fmt.Sprintf("plan_v%d", i), "reviewer", rv)
		ok(t, err, "write review")
		_, err = s.WriteDone(bg, workspace.DoneRequest{TaskID: "t1", Agent: "reviewer", OutputFile: rel})
		ok(t, err, "done review")
		h.Apply(t, s)
	}
	awaitFriction(t, s, "t1", friction.TypeRepeatedRevision)
}

// timeoutsLater runs the daemon nine hours ahead, past every timeout of
// the default settings, and rescans often: a subtask claimed now is in
// progress too long at the daemon's first look.
func timeoutsLater(c *servetest.Options) {
	c.Now = func() time.Time { return time.Now().Add(9 * time.Hour) }
	c.Rescan = 50 * time.Millisecond
}

// testTimeouts: the daemon checks the subtasks in progress at every
// rescan and records a timeout for one in progress too long.
func testTimeouts(t *testing.T, s workspace.Store, h Hooks) {
	approved(t, s, h, "t1", "s1")
	_, err := s.WriteClaim(bg, "t1", "worker_1", "s1")
	ok(t, err, "claim")
	h.Apply(t, s)
	awaitFriction(t, s, "t1", friction.TypeTimeout)
}

// awaitFriction waits for a friction entry of type typ about task, and
// its friction_recorded event in the task's events.
func awaitFriction(t *testing.T, s workspace.Store, task, typ string) {
	t.Helper()
	var id string
	await(t, "a "+typ+" friction entry", func() (bool, string) {
		entries, err := friction.Open(s, "test").List(bg, friction.Filter{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range entries {
			if e.Type == typ && slices.Contains(e.AffectedTasks, task) {
				id = e.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d entries", len(entries))
	})
	await(t, "friction_recorded in the events of "+task, func() (bool, string) {
		evs, _, err := s.ReadEvents(bg, task)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs {
			if e.Name == "friction_recorded" && len(e.Args) == 1 && e.Args[0] == id && e.Attrs["type"] == typ {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs))
	})
}
