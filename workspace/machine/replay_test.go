package machine

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// A REST-auth task, the workspace's running example: the first plan misses
// rate limiting and is sent back; the second has six subtasks and one checkpoint, and three
// workers carry it to completion.
var restTask = workspace.Task{
	ID:          "task_abc123",
	CreatedAt:   t0,
	Description: "Build a REST API for user authentication",
	Context:     "This is for a FastAPI backend, Python 3.11",
	Constraints: []string{"Must use JWT tokens", "Must include rate limiting"},
	Priority:    "normal",
	SubmittedBy: "user",
}

func restPlan(version int) *workspace.Plan {
	p := &workspace.Plan{
		ID: "plan_xyz789", TaskID: "task_abc123", Version: version, CreatedAt: t0, CreatedBy: "orchestrator",
		Status: "proposed", Summary: "Three-endpoint auth API with JWT", WorkerCount: 3,
		Subtasks: []workspace.Subtask{
			{ID: "st_1", Description: "Set up project structure", EstimatedComplexity: "low"},
			{ID: "st_2", Description: "User model and password hashing", Dependencies: []string{"st_1"}, EstimatedComplexity: "medium"},
			{ID: "st_3", Description: "Login endpoint issuing JWT", Dependencies: []string{"st_2"}, EstimatedComplexity: "medium", Parallelizable: true},
			{ID: "st_4", Description: "Registration endpoint", Dependencies: []string{"st_2"}, EstimatedComplexity: "medium", Parallelizable: true},
			{ID: "st_5", Description: "Integration tests", Dependencies: []string{"st_3", "st_4"}, EstimatedComplexity: "medium"},
		},
		Checkpoints: []workspace.Checkpoint{{ID: "checkpoint_1", Description: "Data model reviewed", Subtasks: []string{"st_1", "st_2"}}},
	}
	if version >= 2 {
		p.Subtasks[4] = workspace.Subtask{ID: "st_5", Description: "Rate limiting on login", Dependencies: []string{"st_1"}, EstimatedComplexity: "low", Parallelizable: true}
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: "st_6", Description: "Integration tests", Dependencies: []string{"st_3", "st_4", "st_5"}, EstimatedComplexity: "medium"})
	}
	return p
}

func restJournal() *journal {
	j := &journal{}
	j.propose("orchestrator", restPlan(1))
	j.review("reviewer", planReview("review_plan_v1", VerdictRevisionNeeded, "Missing rate limiting requirement"))
	j.propose("orchestrator", restPlan(2))
	j.review("reviewer", planReview("review_plan_v2", VerdictApproved, "Token expiry is not specified"))
	j.claim("worker_1", "st_1").done("worker_1", "st_1")
	j.claim("worker_2", "st_2").claim("worker_3", "st_5").done("worker_2", "st_2")
	j.review("reviewer", checkpointReview("review_checkpoint_1", "checkpoint_1", VerdictApproved))
	j.claim("worker_1", "st_3").claim("worker_2", "st_4")
	j.done("worker_3", "st_5").done("worker_1", "st_3").done("worker_2", "st_4")
	j.claim("worker_3", "st_6").done("worker_3", "st_6")
	return j
}

// restPlans is the plan loader the daemon would back with
// plans/plan_v<N>.json; it counts its calls.
type restPlans struct{ calls int }

func (l *restPlans) load(version int) (*workspace.Plan, error) {
	l.calls++
	if version < 1 || version > 2 {
		return nil, errors.New("no such version")
	}
	return restPlan(version), nil
}

func TestReplayRESTAuth(t *testing.T) {
	recs := restJournal().recs
	var l restPlans
	st, events, err := checkedReplay(t, restTask, l.load, recs)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if l.calls != 0 {
		t.Errorf("Replay from the start loaded %d plans; the proposals carry them", l.calls)
	}
	if st.Status != vocab.StatusCompleted || st.Phase != PhaseCompleted || st.CompletedAt == nil || st.StartedAt == nil {
		t.Errorf("final status %s phase %s", st.Status, st.Phase)
	}
	if st.PlanID != "plan_xyz789" || st.PlanVersion != 2 || st.PlanStatus != PlanApproved || st.RevisionCount != 1 {
		t.Errorf("plan %s v%d %s, revisions %d", st.PlanID, st.PlanVersion, st.PlanStatus, st.RevisionCount)
	}
	if len(st.Subtasks) != 6 || len(st.Errors) != 0 || st.JournalSeq != int64(len(recs)) {
		t.Errorf("%d subtasks, errors %+v, journal_seq %d", len(st.Subtasks), st.Errors, st.JournalSeq)
	}
	for id, s := range st.Subtasks {
		if s.Status != SubtaskCompleted || s.Attempts != 1 || s.Output != "outputs/"+id+".json" {
			t.Errorf("%s = %+v", id, s)
		}
	}
	if c := st.Checkpoints["checkpoint_1"]; c.Status != CheckpointApproved {
		t.Errorf("checkpoint_1 = %+v", c)
	}
	want := []string{
		EventPlanReady, EventPlanRevisionNeeded, EventReviewIssues,
		EventPlanReady, EventPlanApproved, EventReviewIssues,
		EventWorkAssigned, EventWorkCompleted, EventWorkUnblocked, EventWorkUnblocked,
		EventWorkAssigned, EventWorkAssigned, EventWorkCompleted, EventWorkUnblocked, EventWorkUnblocked, EventCheckpointReached,
		EventCheckpointApproved,
		EventWorkAssigned, EventWorkAssigned,
		EventWorkCompleted, EventWorkCompleted, EventWorkCompleted, EventWorkUnblocked,
		EventWorkAssigned, EventWorkCompleted, EventTaskCompleted,
	}
	if got := eventNames(events); !slices.Equal(got, want) {
		t.Errorf("events\n%v\nwant\n%v", got, want)
	}
	checkGolden(t, "replay_rest_auth", st, events)

	// Folding step by step, with every check, gives the same.
	f := fold(t, restTask, recs)
	if !bytes.Equal(marshal(t, f.state), marshal(t, st)) || !reflect.DeepEqual(f.all, events) {
		t.Errorf("step-by-step fold differs from Replay")
	}
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := atomicfile.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// TestContinueFromEveryPoint plays the crash-recovery path: state.json
// written after any record, read back from disk, then the whole journal
// replayed over it. The result must be the full replay's, byte for byte,
// and the events only those of the records past the state.
func TestContinueFromEveryPoint(t *testing.T) {
	recs := restJournal().recs
	full, fullEvents, err := checkedReplay(t, restTask, nil, recs)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	want := marshal(t, full)
	for k := 0; k <= len(recs); k++ {
		mid, midEvents, err := checkedReplay(t, restTask, nil, recs[:k])
		if err != nil {
			t.Fatalf("Replay of %d records: %v", k, err)
		}
		var onDisk workspace.State
		if err := json.Unmarshal(marshal(t, mid), &onDisk); err != nil {
			t.Fatalf("read back state after %d records: %v", k, err)
		}
		var l restPlans
		got, events, err := checkedContinue(t, onDisk, l.load, recs)
		if err != nil {
			t.Fatalf("Continue after %d records: %v", k, err)
		}
		if b := marshal(t, got); !bytes.Equal(b, want) {
			t.Errorf("Continue after %d records differs from the full replay:\n%s\nwant\n%s", k, b, want)
		}
		if rest := fullEvents[len(midEvents):]; len(events)+len(rest) > 0 && !reflect.DeepEqual(events, rest) {
			t.Errorf("Continue after %d records: events %v, want %v", k, eventNames(events), eventNames(fullEvents[len(midEvents):]))
		}
		if wantLoads := k >= 1 && k < len(recs); (l.calls == 1) != wantLoads || l.calls > 1 {
			t.Errorf("Continue after %d records loaded %d plans", k, l.calls)
		}
	}
}

func TestContinuePlanErrors(t *testing.T) {
	recs := restJournal().recs
	mid, _, err := checkedReplay(t, restTask, nil, recs[:5])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		plans func(int) (*workspace.Plan, error)
		want  string
	}{
		{"no loader", nil, "no plan loader"},
		{"load fails", func(int) (*workspace.Plan, error) { return nil, errors.New("disk on fire") }, "disk on fire"},
		{"nothing loaded", func(int) (*workspace.Plan, error) { return nil, nil }, "got nothing"},
		{"wrong version", func(int) (*workspace.Plan, error) { return restPlan(1), nil }, "got plan plan_xyz789 v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, events, err := checkedContinue(t, mid, tc.plans, recs)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "record 6") {
				t.Fatalf("err = %v, want one naming record 6 and %q", err, tc.want)
			}
			if st.JournalSeq != 5 || len(events) != 0 {
				t.Errorf("state at %d and %d events after a failed load, want the state as given", st.JournalSeq, len(events))
			}
		})
	}
}

// TestReplayIdempotent: a record applied twice is applied once, and a
// journal replayed over itself changes nothing.
func TestReplayIdempotent(t *testing.T) {
	recs := restJournal().recs
	st := Init(restTask)
	var plan *workspace.Plan
	for _, rec := range recs {
		once, oncePlan, _ := checkedStep(t, st, plan, rec)
		twice, twicePlan, events := checkedStep(t, once, oncePlan, rec)
		if len(events) != 0 || !reflect.DeepEqual(once, twice) || twicePlan != oncePlan {
			t.Fatalf("record %d applied twice: events %v, state changed %v", rec.Seq, eventNames(events), !reflect.DeepEqual(once, twice))
		}
		st, plan = once, oncePlan
	}
	doubled := append(slices.Clone(recs), recs...)
	again, _, err := checkedReplay(t, restTask, nil, doubled)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(marshal(t, again), marshal(t, st)) {
		t.Errorf("a journal replayed twice differs from once")
	}
}

// TestApplyDoesNotMutate checks, at every record of the REST journal,
// that Apply leaves a deep copy of its input equal to the input, and that
// changing its result does not reach the input.
func TestApplyDoesNotMutate(t *testing.T) {
	recs := restJournal().recs
	f := folded{state: Init(restTask)}
	for _, rec := range recs {
		stCopy := deepCopy(t, f.state)
		var planCopy *workspace.Plan
		if f.plan != nil {
			p := deepCopy(t, *f.plan)
			planCopy = &p
		}
		recCopy := deepCopy(t, rec)
		next, events := checkedApply(t, f.state, f.plan, rec)
		if !reflect.DeepEqual(f.state, stCopy) {
			t.Fatalf("record %d: Apply changed the state it was given", rec.Seq)
		}
		if f.plan != nil && !reflect.DeepEqual(*f.plan, *planCopy) {
			t.Fatalf("record %d: Apply changed the plan it was given", rec.Seq)
		}
		if !reflect.DeepEqual(rec, recCopy) {
			t.Fatalf("record %d: Apply changed the record it was given", rec.Seq)
		}
		scratch := next
		scribble(&scratch)
		if !reflect.DeepEqual(f.state, stCopy) {
			t.Fatalf("record %d: Apply's result shares memory with its input", rec.Seq)
		}
		next, plan, _ := checkedStep(t, f.state, f.plan, rec)
		f.state, f.plan, f.all = next, plan, append(f.all, events...)
	}
}

// deepCopy copies v through JSON: every pointer, map and slice reachable
// from the copy is fresh.
func deepCopy[T any](t testing.TB, v T) T {
	t.Helper()
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
