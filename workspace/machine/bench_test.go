package machine

import (
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkReplayRESTAuth folds the 17-record REST-auth journal from the
// start: what `state rebuild` costs for a small task.
func BenchmarkReplayRESTAuth(b *testing.B) {
	recs := restJournal().recs
	for b.Loop() {
		if _, _, err := Replay(restTask, nil, recs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyWide applies one done marker to a task of 1,000 subtasks
// and 1,000 workers: Apply copies the state, so its cost grows with the
// task's width.
func BenchmarkApplyWide(b *testing.B) {
	const n = 1000
	plan, j := widePlan(n)
	for i := range n {
		j.claim(fmt.Sprintf("worker_%d", i), fmt.Sprintf("st_%d", i))
	}
	st, _, err := Replay(smallTask, nil, j.recs)
	if err != nil {
		b.Fatal(err)
	}
	rec := workspace.JournalRecord{Seq: st.JournalSeq + 1, TakenAt: t0, Kind: workspace.KindDone,
		Marker: workspace.Marker{AgentID: "worker_7", SubtaskID: "st_7", OutputFile: "outputs/st_7.json"}}
	if _, events := Apply(st, plan, rec); len(events) != 1 || events[0].Name != EventWorkCompleted {
		b.Fatalf("events %v", eventNames(events))
	}
	for b.Loop() {
		Apply(st, plan, rec)
	}
}

// BenchmarkContinueBurst folds a burst of 32 done markers into a task of
// 1,000 independent subtasks, as the daemon does for a burst.
func BenchmarkContinueBurst(b *testing.B) {
	plan, j := widePlan(1000)
	st, _, err := Replay(smallTask, nil, j.recs)
	if err != nil {
		b.Fatal(err)
	}
	var recs []workspace.JournalRecord
	for i := range 32 {
		recs = append(recs, workspace.JournalRecord{Seq: st.JournalSeq + 1 + int64(i), TakenAt: t0, Kind: workspace.KindDone,
			Marker: workspace.Marker{AgentID: fmt.Sprintf("worker_%d", i), SubtaskID: fmt.Sprintf("st_%d", 500+i), OutputFile: "outputs/x.json"}})
	}
	plans := func(int) (*workspace.Plan, error) { return plan, nil }
	if next, _, err := Continue(st, plans, recs); err != nil || next.Subtasks["st_531"].Status != SubtaskCompleted {
		b.Fatalf("burst not folded: %v", err)
	}
	for b.Loop() {
		Continue(st, plans, recs)
	}
}

// widePlan is a plan of n independent subtasks (st_0 …) and the journal
// that proposes and approves it.
func widePlan(n int) (*workspace.Plan, *journal) {
	plan := &workspace.Plan{ID: "plan_w", TaskID: "task_t1", Version: 1}
	for i := range n {
		plan.Subtasks = append(plan.Subtasks, workspace.Subtask{ID: fmt.Sprintf("st_%d", i)})
	}
	return plan, (&journal{}).propose("orchestrator", plan).review("reviewer", planReview("r", VerdictApproved))
}
