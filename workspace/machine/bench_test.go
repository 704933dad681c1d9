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
	plan := &workspace.Plan{ID: "plan_w", TaskID: "task_t1", Version: 1}
	for i := range n {
		plan.Subtasks = append(plan.Subtasks, workspace.Subtask{ID: fmt.Sprintf("st_%d", i)})
	}
	j := (&journal{}).propose("orchestrator", plan).review("reviewer", planReview("r", VerdictApproved))
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
