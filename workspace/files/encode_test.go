package files

import (
	"fmt"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// BenchmarkApplyChunk32 is the CPU a state write costs beside the disk:
// 32 done markers applied to a task of 256 subtasks (machine.Continue),
// the diff, the delta's schema check and the encoding, as commit does
// them for one chunk of a burst.
func BenchmarkApplyChunk32(b *testing.B) {
	const n, chunkN = 256, 32
	plan := &workspace.Plan{ID: "plan_b", TaskID: "t", Version: 1, Summary: "bench"}
	for i := range n {
		plan.Subtasks = append(plan.Subtasks, workspace.Subtask{ID: fmt.Sprintf("st_%d", i+1), Description: "subtask"})
	}
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var recs []workspace.JournalRecord
	add := func(r workspace.JournalRecord) {
		r.Seq = int64(len(recs) + 1)
		r.TakenAt = t0.Add(time.Duration(r.Seq) * time.Second)
		r.File = "." + r.Kind + "." + r.Marker.AgentID
		recs = append(recs, r)
	}
	add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "coordinator", OutputFile: "plan.json"}, Plan: plan})
	add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "reviewer", OutputFile: "reviews/r.json"},
		Review: &workspace.Review{ID: "r", Type: "plan_review", Reviewer: "reviewer", Verdict: "approved"}})
	// Half the subtasks done already, as in the middle of a run.
	for i := range n / 2 {
		sub := fmt.Sprintf("st_%d", i+1)
		add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: fmt.Sprintf("agent_%d", i%32), SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed"}})
	}
	task := workspace.Task{ID: "t", Description: "bench", CreatedAt: t0}
	st, _, err := machine.Replay(task, nil, recs)
	if err != nil {
		b.Fatal(err)
	}
	var chunk []workspace.JournalRecord
	for i := n / 2; i < n/2+chunkN; i++ {
		sub := fmt.Sprintf("st_%d", i+1)
		chunk = append(chunk, workspace.JournalRecord{Seq: st.JournalSeq + int64(len(chunk)) + 1, TakenAt: t0.Add(time.Hour), Kind: workspace.KindDone, File: ".done.x",
			Marker: workspace.Marker{AgentID: fmt.Sprintf("agent_%d", i%32), SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed"}})
	}
	plans := func(int) (*workspace.Plan, error) { return plan, nil }
	for b.Loop() {
		next, _, err := machine.Continue(st, plans, chunk)
		if err != nil {
			b.Fatal(err)
		}
		data, err := atomicfile.Marshal(next)
		if err != nil {
			b.Fatal(err)
		}
		if err := statecheck.Next(&st, next, data); err != nil {
			b.Fatal(err)
		}
		if next.JournalSeq != st.JournalSeq+chunkN {
			b.Fatalf("journal_seq %d, want %d", next.JournalSeq, st.JournalSeq+chunkN)
		}
	}
}
