package machine

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// fuzzPlans are the plans a fuzzed journal may propose: good ones of
// several shapes and bad ones the machine must refuse.
func fuzzPlan(n, version int) *workspace.Plan {
	p := smallPlan(version)
	switch n % 5 {
	case 1: // a diamond with two checkpoints sharing a subtask
		p.Subtasks = []workspace.Subtask{
			{ID: "st_1"},
			{ID: "st_2", Dependencies: []string{"st_1"}, MaxRetries: 2},
			{ID: "st_3", Dependencies: []string{"st_1"}},
			{ID: "st_4", Dependencies: []string{"st_2", "st_3"}},
		}
		p.Checkpoints = []workspace.Checkpoint{
			{ID: "checkpoint_1", Subtasks: []string{"st_1", "st_2"}},
			{ID: "checkpoint_2", Subtasks: []string{"st_2", "st_4"}},
		}
	case 2: // nothing to do but an empty checkpoint
		p.Subtasks = nil
		p.Checkpoints = []workspace.Checkpoint{{ID: "checkpoint_1", Subtasks: nil}}
	case 3: // a cycle
		p.Subtasks[0].Dependencies = []string{"st_2"}
	case 4: // another task's plan
		p.TaskID = "task_other"
	}
	return p
}

// fuzzJournal turns bytes into a journal: three bytes a record (an
// operation and two operands), with seqs that may repeat or go back.
func fuzzJournal(data []byte) []workspace.JournalRecord {
	agents := []string{"worker_1", "worker_2", "worker_3", "reviewer"}
	subtasks := []string{"st_1", "st_2", "st_3", "st_4", "st_9", ""}
	verdicts := []string{VerdictApproved, VerdictRevisionNeeded, VerdictRejected, "maybe"}
	targets := []string{"checkpoint_1", "checkpoint_2", "checkpoint_9"}
	var (
		recs []workspace.JournalRecord
		seq  int64
	)
	for i := 0; i+2 < len(data) && len(recs) < 200; i += 3 {
		op, a, b := data[i], int(data[i+1]), int(data[i+2])
		agent, subtask := agents[a%len(agents)], subtasks[b%len(subtasks)]
		seq++
		rec := workspace.JournalRecord{
			Seq: seq, TakenAt: t0.Add(time.Duration(len(recs)) * time.Second),
			Kind: workspace.KindDone, File: ".done." + agent,
			Marker: workspace.Marker{AgentID: agent, SubtaskID: subtask, OutputFile: "outputs/" + subtask + ".json"},
		}
		switch op % 12 {
		case 0:
			rec.Kind = workspace.KindClaim
		case 1:
		case 2:
			rec.Marker.Status, rec.Marker.Error = DoneFailed, "failure "+subtask
		case 3:
			rec.Marker = workspace.Marker{AgentID: "orchestrator", OutputFile: "plan.json"}
			rec.Plan = fuzzPlan(b, a%3+1)
		case 4:
			rec.Marker.SubtaskID = ""
			rec.Review = &workspace.Review{ID: "review_plan", Type: ReviewPlan, Verdict: verdicts[a%len(verdicts)], Issues: issueList([]string{"p"})[:b%2]}
		case 5:
			rec.Marker.SubtaskID = ""
			rec.Review = &workspace.Review{ID: "review_cp", Type: ReviewCheckpoint, Target: targets[b%len(targets)], Verdict: verdicts[a%len(verdicts)]}
		case 6:
			rec.Review = &workspace.Review{ID: "review_out", Type: ReviewOutput, Target: subtask, Verdict: verdicts[a%len(verdicts)], Escalate: "x"[:b%2]}
		case 7:
			rec.Rejected = "bad output"
		case 8:
			if a%8 == 0 {
				rec.Marker.Status = DoneCancelled
			} else {
				rec.Kind = workspace.KindClaim
			}
		case 9:
			rec.Marker.Escalate = "help"
		case 10:
			// Replay: this record reuses an earlier seq.
			seq -= int64(a%4) + 1
			rec.Seq = max(seq, 0)
		case 11:
			rec.Kind = []string{"poke", workspace.KindDone}[a%2]
			rec.Marker.SubtaskID = ""
		}
		recs = append(recs, rec)
	}
	return recs
}

// fuzzSeeds start the fuzzer from journals that reach deep states; the
// test below keeps them honest.
var fuzzSeeds = []struct {
	name   string
	data   []byte
	status string
	want   []string // events the journal must produce
}{
	{
		name:   "completed",
		data:   []byte{3, 0, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 2, 2, 1, 2, 2, 5, 0, 0},
		status: vocab.StatusCompleted,
		want:   []string{EventPlanApproved, EventCheckpointReached, EventCheckpointApproved, EventTaskCompleted},
	},
	{
		name: "checkpoint_revised_then_replayed",
		data: []byte{3, 0, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 5, 1, 0,
			0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 5, 0, 0, 10, 0, 0, 0, 2, 2, 1, 2, 2},
		status: vocab.StatusCompleted,
		want:   []string{EventCheckpointRevisionNeeded, EventCheckpointApproved, EventTaskCompleted},
	},
	{
		name:   "diamond_retries_then_fails",
		data:   []byte{3, 0, 1, 4, 0, 0, 0, 0, 0, 1, 0, 0, 2, 1, 1, 2, 1, 1, 2, 1, 1, 0, 0, 2},
		status: vocab.StatusFailed,
		want:   []string{EventWorkFailed, EventTaskFailed, EventClaimRefused},
	},
	{
		name:   "revised_plan_cancelled",
		data:   []byte{3, 0, 0, 4, 1, 1, 3, 1, 0, 4, 0, 0, 7, 0, 0, 8, 0, 0, 11, 0, 0},
		status: vocab.StatusCancelled,
		want:   []string{EventPlanRevisionNeeded, EventPlanApproved, EventOutputRejected, EventTaskCancelled, EventMarkerRefused},
	},
}

func TestFuzzSeedsReachDeepStates(t *testing.T) {
	for _, seed := range fuzzSeeds {
		t.Run(seed.name, func(t *testing.T) {
			f := fold(t, smallTask, fuzzJournal(seed.data))
			names := eventNames(f.all)
			if f.state.Status != seed.status {
				t.Errorf("status %s, want %s (events %v)", f.state.Status, seed.status, names)
			}
			for _, w := range seed.want {
				if !slices.Contains(names, w) {
					t.Errorf("no %s among %v", w, names)
				}
			}
		})
	}
}

// FuzzApply folds random journals and checks that the machine never
// panics, never mutates its input, keeps journal_seq monotonic, never
// takes a completed subtask back but through a checkpoint revision, and
// that Replay agrees with folding step by step.
func FuzzApply(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := fuzzJournal(data)
		got := fold(t, smallTask, recs)
		st, events, err := checkedReplay(t, smallTask, nil, recs)
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		if !bytes.Equal(snapshot(t, st, events), snapshot(t, got.state, got.all)) {
			t.Fatalf("Replay differs from the step-by-step fold")
		}
	})
}
