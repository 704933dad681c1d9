package machine

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

var smallTask = workspace.Task{ID: "task_t1", CreatedAt: t0, Description: "Small task"}

// smallPlan: st_2 waits for st_1, st_3 may be retried once, checkpoint_1
// reviews st_1 and st_2.
func smallPlan(version int) *workspace.Plan {
	return &workspace.Plan{
		ID: "plan_1", TaskID: "task_t1", Version: version, CreatedAt: t0, CreatedBy: "orchestrator",
		Subtasks: []workspace.Subtask{
			{ID: "st_1", Description: "first"},
			{ID: "st_2", Description: "second", Dependencies: []string{"st_1"}},
			{ID: "st_3", Description: "third", MaxRetries: 1},
		},
		Checkpoints: []workspace.Checkpoint{{ID: "checkpoint_1", Subtasks: []string{"st_1", "st_2"}}},
	}
}

func withPlan(p *workspace.Plan, edit func(p *workspace.Plan)) *workspace.Plan {
	edit(p)
	return p
}

// approved starts a journal whose plan v1 was proposed and approved.
func approved() *journal {
	j := &journal{}
	j.propose("orchestrator", smallPlan(1))
	j.review("reviewer", planReview("review_plan_v1", VerdictApproved))
	return j
}

// awaitingCheckpoint: st_1 and st_2 done, checkpoint_1 awaits its review.
func awaitingCheckpoint() *journal {
	return approved().claim("worker_1", "st_1").done("worker_1", "st_1").claim("worker_2", "st_2").done("worker_2", "st_2")
}

// allDone: every subtask done, checkpoint_1 still awaiting review.
func allDone() *journal {
	return awaitingCheckpoint().claim("worker_3", "st_3").done("worker_3", "st_3")
}

func TestInit(t *testing.T) {
	task := workspace.Task{ID: "task_x", CreatedAt: time.Date(2024, 1, 15, 11, 0, 0, 0, time.FixedZone("CET", 3600))}
	st := Init(task)
	if st.TaskID != "task_x" || st.Status != vocab.StatusPlanning || st.Phase != PhasePlanning || st.PlanStatus != PlanNone {
		t.Errorf("Init = %+v", st)
	}
	if st.Subtasks == nil || st.Checkpoints == nil || st.Workers == nil || st.Errors == nil || st.JournalSeq != 0 {
		t.Errorf("Init left a nil map or slice or a seq: %+v", st)
	}
	if !st.LastUpdated.Equal(task.CreatedAt) || st.LastUpdated.Location() != time.UTC {
		t.Errorf("last_updated = %v, want %v in UTC", st.LastUpdated, task.CreatedAt)
	}
	checkGolden(t, "init", st, nil)
}

// TestApply covers every transition and every refusal: each case folds
// a journal from Init and checks the last record's events and state
// against testdata/<name>.golden.
func TestApply(t *testing.T) {
	tests := []struct {
		name string
		j    *journal
		// events of the last record, by name
		want []string
		// whether the last record was refused (adds an error)
		refused bool
		check   func(t *testing.T, st workspace.State)
	}{
		// Rejected records.
		{
			name: "rejected_output",
			j: approved().add(workspace.JournalRecord{Kind: workspace.KindDone, File: ".done.worker_1",
				Marker:   workspace.Marker{AgentID: "worker_1", SubtaskID: "st_1", OutputFile: "outputs/st_1.json"},
				Rejected: "outputs/st_1.json: missing required property summary"}),
			want: []string{EventOutputRejected}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if st.Subtasks["st_1"].Status != SubtaskPending || st.Workers["worker_1"] != nil {
					t.Errorf("a rejected record changed the subtask or the workers: %+v", st)
				}
			},
		},
		{
			name: "rejected_unparsable_marker",
			j: (&journal{}).add(workspace.JournalRecord{Kind: workspace.KindDone, File: ".done.worker_9",
				Rejected: "marker is not JSON after the grace period"}),
			want: []string{EventOutputRejected}, refused: true,
		},

		// Plan proposals.
		{
			name: "plan_proposed",
			j:    (&journal{}).propose("orchestrator", smallPlan(1)),
			want: []string{EventPlanReady},
			check: func(t *testing.T, st workspace.State) {
				if st.PlanStatus != PlanProposed || st.Phase != PhasePlanReview || st.PlanID != "plan_1" || st.PlanVersion != 1 || st.Status != vocab.StatusPlanning {
					t.Errorf("state after proposal: %+v", st)
				}
			},
		},
		{
			name: "plan_reproposed_after_revision",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", VerdictRevisionNeeded, "Missing rate limiting")).
				propose("orchestrator", smallPlan(2)),
			want: []string{EventPlanReady},
			check: func(t *testing.T, st workspace.State) {
				if st.PlanVersion != 2 || st.PlanStatus != PlanProposed || st.RevisionCount != 1 {
					t.Errorf("state after a second proposal: %+v", st)
				}
			},
		},
		{
			name:    "plan_refused_already_approved",
			j:       approved().propose("orchestrator", smallPlan(2)),
			want:    []string{EventMarkerRefused},
			refused: true,
		},
		{
			name: "plan_refused_stale_version",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", VerdictRevisionNeeded, "Too vague")).
				propose("orchestrator", smallPlan(1)),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_refused_other_task",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.TaskID = "task_other"
			})),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_refused_unknown_dependency",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.Subtasks[2].Dependencies = []string{"st_9"}
			})),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_refused_cycle",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.Subtasks[0].Dependencies = []string{"st_2"}
			})),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_refused_duplicate_subtask",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.Subtasks[2].ID = "st_1"
			})),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_refused_unknown_checkpoint_member",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.Checkpoints[0].Subtasks = []string{"st_1", "st_7"}
			})),
			want: []string{EventMarkerRefused}, refused: true,
		},

		// Plan reviews.
		{
			name: "plan_review_approved",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", VerdictApproved, "Token expiry is not specified", "No logging")),
			want: []string{EventPlanApproved, EventReviewIssues},
			check: func(t *testing.T, st workspace.State) {
				if st.Status != vocab.StatusExecuting || st.Phase != PhaseWorkInProgress || st.PlanStatus != PlanApproved || st.StartedAt == nil {
					t.Errorf("state after approval: %+v", st)
				}
				if s := st.Subtasks["st_2"]; s.Status != SubtaskBlocked || !slices.Equal(s.BlockedBy, []string{"st_1"}) {
					t.Errorf("st_2 = %+v, want blocked by st_1", s)
				}
				if st.Subtasks["st_1"].Status != SubtaskPending || st.Checkpoints["checkpoint_1"].Status != CheckpointPending {
					t.Errorf("st_1 or checkpoint_1 not pending: %+v", st)
				}
			},
		},
		{
			name: "plan_review_revision_needed",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", VerdictRevisionNeeded, "Missing rate limiting requirement", "No tests")),
			want: []string{EventPlanRevisionNeeded, EventReviewIssues},
			check: func(t *testing.T, st workspace.State) {
				if st.PlanStatus != PlanRevisionNeeded || st.RevisionCount != 1 || st.Phase != PhasePlanning || st.Status != vocab.StatusPlanning {
					t.Errorf("state after revision: %+v", st)
				}
			},
		},
		{
			name: "plan_review_rejected",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", VerdictRejected)),
			want: []string{EventPlanRevisionNeeded},
			check: func(t *testing.T, st workspace.State) {
				if st.PlanStatus != PlanRevisionNeeded || st.RevisionCount != 1 {
					t.Errorf("state after rejection: %+v", st)
				}
			},
		},
		{
			name:    "plan_review_refused_nothing_proposed",
			j:       (&journal{}).review("reviewer", planReview("review_plan_v1", VerdictApproved)),
			want:    []string{EventMarkerRefused},
			refused: true,
		},
		{
			name:    "plan_review_refused_already_approved",
			j:       approved().review("reviewer", planReview("review_plan_v1b", VerdictApproved)),
			want:    []string{EventMarkerRefused},
			refused: true,
		},
		{
			name: "review_refused_unknown_verdict",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", planReview("review_plan_v1", "maybe")),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "review_refused_unknown_type",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", workspace.Review{ID: "r1", Type: "vibe_check", Verdict: VerdictApproved}),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "plan_with_nothing_to_do_completes_on_approval",
			j: (&journal{}).propose("orchestrator", withPlan(smallPlan(1), func(p *workspace.Plan) {
				p.Subtasks, p.Checkpoints = nil, nil
			})).review("reviewer", planReview("review_plan_v1", VerdictApproved)),
			want: []string{EventPlanApproved, EventTaskCompleted},
		},

		// Claims.
		{
			name: "claim_pending",
			j:    approved().claim("worker_1", "st_1"),
			want: []string{EventWorkAssigned},
			check: func(t *testing.T, st workspace.State) {
				s := st.Subtasks["st_1"]
				if s.Status != SubtaskInProgress || s.Worker != "worker_1" || s.Attempts != 1 || s.StartedAt == nil {
					t.Errorf("st_1 = %+v", s)
				}
				if w := st.Workers["worker_1"]; w.Status != WorkerBusy || w.CurrentTask != "st_1" {
					t.Errorf("worker_1 = %+v", w)
				}
			},
		},
		{
			name: "claim_refused_while_planning",
			j:    (&journal{}).propose("orchestrator", smallPlan(1)).claim("worker_1", "st_1"),
			want: []string{EventClaimRefused}, refused: true,
		},
		{
			name: "claim_refused_unknown_subtask",
			j:    approved().claim("worker_1", "st_9"),
			want: []string{EventClaimRefused}, refused: true,
		},
		{
			name: "claim_refused_no_subtask",
			j:    approved().claim("worker_1", ""),
			want: []string{EventClaimRefused}, refused: true,
		},
		{
			name: "claim_refused_blocked",
			j:    approved().claim("worker_1", "st_2"),
			want: []string{EventClaimRefused}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if msg := st.Errors[len(st.Errors)-1].Message; msg != "subtask st_2 is blocked by st_1" {
					t.Errorf("refusal = %q", msg)
				}
			},
		},
		{
			name: "claim_refused_taken",
			j:    approved().claim("worker_2", "st_3").claim("worker_1", "st_3"),
			want: []string{EventClaimRefused}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if msg := st.Errors[len(st.Errors)-1].Message; msg != "subtask st_3 already taken by worker_2" {
					t.Errorf("refusal = %q", msg)
				}
				if s := st.Subtasks["st_3"]; s.Worker != "worker_2" || s.Attempts != 1 {
					t.Errorf("the refused claim changed st_3: %+v", s)
				}
				if _, ok := st.Workers["worker_1"]; ok {
					t.Errorf("a refused claim registered its agent")
				}
			},
		},
		{
			name: "claim_refused_completed",
			j:    approved().claim("worker_2", "st_3").done("worker_2", "st_3").claim("worker_1", "st_3"),
			want: []string{EventClaimRefused}, refused: true,
		},

		// Subtask done markers.
		{
			name: "done_completed_unblocks",
			j:    approved().claim("worker_1", "st_1").done("worker_1", "st_1"),
			want: []string{EventWorkCompleted, EventWorkUnblocked},
			check: func(t *testing.T, st workspace.State) {
				s := st.Subtasks["st_1"]
				if s.Status != SubtaskCompleted || s.CompletedAt == nil || s.Output != "outputs/st_1.json" {
					t.Errorf("st_1 = %+v", s)
				}
				if s := st.Subtasks["st_2"]; s.Status != SubtaskPending || s.BlockedBy != nil {
					t.Errorf("st_2 = %+v, want pending", s)
				}
				if w := st.Workers["worker_1"]; w.Status != WorkerAvailable {
					t.Errorf("worker_1 = %+v", w)
				}
			},
		},
		{
			name: "done_implicit_claim",
			j:    approved().done("worker_3", "st_3"),
			want: []string{EventWorkAssigned, EventWorkCompleted},
			check: func(t *testing.T, st workspace.State) {
				if s := st.Subtasks["st_3"]; s.Status != SubtaskCompleted || s.Worker != "worker_3" || s.Attempts != 1 {
					t.Errorf("st_3 = %+v", s)
				}
			},
		},
		{
			name: "done_keeps_worker_busy_with_another_subtask",
			j:    approved().claim("worker_1", "st_1").claim("worker_1", "st_3").done("worker_1", "st_3"),
			want: []string{EventWorkCompleted},
			check: func(t *testing.T, st workspace.State) {
				if w := st.Workers["worker_1"]; w.Status != WorkerBusy || w.CurrentTask != "st_1" {
					t.Errorf("worker_1 = %+v, want busy with st_1", w)
				}
			},
		},
		{
			name: "done_refused_unknown_subtask",
			j:    approved().done("worker_1", "st_9"),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "done_refused_duplicate",
			j:    approved().done("worker_1", "st_1").done("worker_1", "st_1"),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "done_refused_blocked",
			j:    approved().done("worker_1", "st_2"),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "done_refused_other_worker",
			j:    approved().claim("worker_1", "st_1").done("worker_2", "st_1"),
			want: []string{EventMarkerRefused}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if s := st.Subtasks["st_1"]; s.Status != SubtaskInProgress || s.Worker != "worker_1" {
					t.Errorf("st_1 = %+v", s)
				}
			},
		},
		{
			name: "done_refused_while_planning",
			j:    (&journal{}).done("worker_1", "st_1"),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "done_refused_unknown_status",
			j:    approved().marker(workspace.Marker{AgentID: "worker_1", SubtaskID: "st_1", Status: "half-done"}),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "done_refused_names_nothing",
			j:    approved().marker(workspace.Marker{AgentID: "worker_1", OutputFile: "notes.txt"}),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "unknown_kind_refused",
			j:    approved().add(workspace.JournalRecord{Kind: "poke", Marker: workspace.Marker{AgentID: "worker_1"}}),
			want: []string{EventMarkerRefused}, refused: true,
		},

		// Failures and retries.
		{
			name: "done_failed_retry",
			j:    approved().claim("worker_3", "st_3").failed("worker_3", "st_3", "pytest: 2 failures"),
			want: []string{EventWorkFailed}, refused: true, // the failure is recorded in errors
			check: func(t *testing.T, st workspace.State) {
				s := st.Subtasks["st_3"]
				if s.Status != SubtaskPending || s.Worker != "" || s.Attempts != 1 || s.Error != "pytest: 2 failures" {
					t.Errorf("st_3 = %+v, want pending for a retry", s)
				}
				if st.Status != vocab.StatusExecuting || st.Workers["worker_3"].Status != WorkerAvailable {
					t.Errorf("task or worker after a retryable failure: %+v", st)
				}
			},
		},
		{
			name: "claim_after_retry",
			j:    approved().claim("worker_3", "st_3").failed("worker_3", "st_3", "flaky").claim("worker_1", "st_3"),
			want: []string{EventWorkAssigned},
			check: func(t *testing.T, st workspace.State) {
				if s := st.Subtasks["st_3"]; s.Status != SubtaskInProgress || s.Attempts != 2 || s.Worker != "worker_1" {
					t.Errorf("st_3 = %+v", s)
				}
			},
		},
		{
			name: "done_failed_no_retry_fails_task",
			j:    approved().claim("worker_1", "st_1").claim("worker_3", "st_3").failed("worker_1", "st_1", "cannot reach the database"),
			want: []string{EventWorkFailed, EventTaskFailed}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if st.Status != vocab.StatusFailed || st.Phase != PhaseFailed || st.CompletedAt == nil || st.Subtasks["st_1"].Status != SubtaskFailed {
					t.Errorf("state after a final failure: %+v", st)
				}
				if w := st.Workers["worker_3"]; w.Status != WorkerAvailable {
					t.Errorf("worker_3 still %+v on a failed task", w)
				}
			},
		},
		{
			name: "done_failed_retries_exhausted",
			j: approved().claim("worker_3", "st_3").failed("worker_3", "st_3", "flaky").
				claim("worker_3", "st_3").failed("worker_3", "st_3", "flaky again"),
			want: []string{EventWorkFailed, EventTaskFailed}, refused: true,
		},
		{
			name: "done_failed_without_message",
			j:    approved().claim("worker_3", "st_3").failed("worker_3", "st_3", ""),
			want: []string{EventWorkFailed}, refused: true,
		},

		// Checkpoints.
		{
			name: "checkpoint_reached",
			j:    approved().claim("worker_1", "st_1").done("worker_1", "st_1").done("worker_2", "st_2"),
			want: []string{EventWorkAssigned, EventWorkCompleted, EventCheckpointReached},
			check: func(t *testing.T, st workspace.State) {
				if c := st.Checkpoints["checkpoint_1"]; c.Status != CheckpointAwaitingReview || c.ReachedAt == nil {
					t.Errorf("checkpoint_1 = %+v", c)
				}
				if st.Phase != PhaseWorkInProgress {
					t.Errorf("phase %s with st_3 still to do", st.Phase)
				}
			},
		},
		{
			name: "all_done_awaiting_checkpoint_review",
			j:    allDone(),
			want: []string{EventWorkCompleted},
			check: func(t *testing.T, st workspace.State) {
				if st.Phase != PhaseAwaitingCheckpointReview || st.Status != vocab.StatusExecuting {
					t.Errorf("status %s phase %s", st.Status, st.Phase)
				}
			},
		},
		{
			name: "checkpoint_approved_completes_task",
			j:    allDone().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)),
			want: []string{EventCheckpointApproved, EventTaskCompleted},
			check: func(t *testing.T, st workspace.State) {
				if st.Status != vocab.StatusCompleted || st.Phase != PhaseCompleted || st.CompletedAt == nil {
					t.Errorf("state after the last approval: %+v", st)
				}
				if c := st.Checkpoints["checkpoint_1"]; c.Status != CheckpointApproved || c.Review != "review_cp1" || c.ReviewedAt == nil {
					t.Errorf("checkpoint_1 = %+v", c)
				}
			},
		},
		{
			name: "checkpoint_approved_work_remains",
			j:    awaitingCheckpoint().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved, "Naming is inconsistent")),
			want: []string{EventCheckpointApproved, EventReviewIssues},
			check: func(t *testing.T, st workspace.State) {
				if st.Status != vocab.StatusExecuting {
					t.Errorf("task %s with st_3 pending", st.Status)
				}
			},
		},
		{
			name: "task_completes_after_checkpoint_approved",
			j: awaitingCheckpoint().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)).
				done("worker_3", "st_3"),
			want: []string{EventWorkAssigned, EventWorkCompleted, EventTaskCompleted},
		},
		{
			name: "checkpoint_revision_needed",
			j:    allDone().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictRevisionNeeded, "Passwords stored in plain text")),
			want: []string{EventCheckpointRevisionNeeded, EventReviewIssues},
			check: func(t *testing.T, st workspace.State) {
				if c := st.Checkpoints["checkpoint_1"]; c.Status != CheckpointRevisionNeeded {
					t.Errorf("checkpoint_1 = %+v", c)
				}
				if s := st.Subtasks["st_1"]; s.Status != SubtaskPending || s.Worker != "" || s.Attempts != 1 || s.CompletedAt != nil {
					t.Errorf("st_1 = %+v, want pending with its attempt kept", s)
				}
				if s := st.Subtasks["st_2"]; s.Status != SubtaskBlocked || !slices.Equal(s.BlockedBy, []string{"st_1"}) {
					t.Errorf("st_2 = %+v, want blocked by st_1 again", s)
				}
				if st.Subtasks["st_3"].Status != SubtaskCompleted || st.RevisionCount != 1 || st.Phase != PhaseWorkInProgress {
					t.Errorf("state after a checkpoint revision: %+v", st)
				}
			},
		},
		{
			name: "checkpoint_rejected",
			j:    allDone().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictRejected)),
			want: []string{EventCheckpointRevisionNeeded},
		},
		{
			name: "checkpoint_reached_again_after_revision",
			j: allDone().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictRevisionNeeded, "Plain text passwords")).
				claim("worker_1", "st_1").done("worker_1", "st_1").claim("worker_2", "st_2").done("worker_2", "st_2"),
			want: []string{EventWorkCompleted, EventCheckpointReached},
			check: func(t *testing.T, st workspace.State) {
				if c := st.Checkpoints["checkpoint_1"]; c.Status != CheckpointAwaitingReview || c.Review != "review_cp1" {
					t.Errorf("checkpoint_1 = %+v", c)
				}
				if s := st.Subtasks["st_1"]; s.Attempts != 2 {
					t.Errorf("st_1 attempts %d, want 2", s.Attempts)
				}
				if st.Phase != PhaseAwaitingCheckpointReview {
					t.Errorf("phase %s", st.Phase)
				}
			},
		},
		{
			name: "checkpoint_review_refused_not_reached",
			j:    approved().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "checkpoint_review_refused_unknown",
			j:    awaitingCheckpoint().review("reviewer", checkpointReview("review_cp9", "checkpoint_9", VerdictApproved)),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "checkpoint_review_refused_while_planning",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).
				review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)),
			want: []string{EventMarkerRefused}, refused: true,
		},

		// Other reviews, cancellation, escalation, finished tasks.
		{
			name: "output_review_recorded",
			j: approved().done("worker_3", "st_3").review("reviewer", workspace.Review{
				ID: "review_st_3", Type: ReviewOutput, Target: "st_3", Reviewer: "reviewer", Verdict: VerdictApproved,
				Issues: issueList([]string{"Missing docstrings"})}),
			want: []string{EventReviewRecorded, EventReviewIssues},
		},
		{
			name: "cancelled",
			j: approved().claim("worker_1", "st_1").
				marker(workspace.Marker{AgentID: "coordinator", Status: DoneCancelled, Error: "requirements changed"}),
			want: []string{EventTaskCancelled},
			check: func(t *testing.T, st workspace.State) {
				if st.Status != vocab.StatusCancelled || st.Phase != PhaseCancelled || st.CompletedAt == nil {
					t.Errorf("state after cancel: %+v", st)
				}
				if w := st.Workers["worker_1"]; w.Status != WorkerAvailable {
					t.Errorf("worker_1 = %+v on a cancelled task", w)
				}
			},
		},
		{
			name: "cancelled_while_planning",
			j:    (&journal{}).marker(workspace.Marker{AgentID: "coordinator", Status: DoneCancelled}),
			want: []string{EventTaskCancelled},
		},
		{
			name: "escalated_by_marker",
			j: approved().claim("worker_1", "st_1").marker(workspace.Marker{AgentID: "worker_1", SubtaskID: "st_1",
				OutputFile: "outputs/st_1.json", Escalate: "needs production credentials"}),
			want: []string{EventWorkCompleted, EventWorkUnblocked, EventEscalated},
		},
		{
			name: "escalated_by_review",
			j: (&journal{}).propose("orchestrator", smallPlan(1)).review("reviewer", workspace.Review{
				ID: "review_plan_v1", Type: ReviewPlan, Reviewer: "reviewer", Verdict: VerdictRevisionNeeded,
				Escalate: "scope is a product decision"}),
			want: []string{EventPlanRevisionNeeded, EventEscalated},
		},
		{
			name:    "escalated_even_when_refused",
			j:       approved().marker(workspace.Marker{AgentID: "worker_1", SubtaskID: "st_2", Escalate: "st_2 cannot wait"}),
			want:    []string{EventMarkerRefused, EventEscalated},
			refused: true,
		},
		{
			name: "refused_on_completed_task",
			j: allDone().review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)).
				claim("worker_1", "st_1"),
			want: []string{EventClaimRefused}, refused: true,
			check: func(t *testing.T, st workspace.State) {
				if msg := st.Errors[len(st.Errors)-1].Message; msg != "task is completed" {
					t.Errorf("refusal = %q", msg)
				}
			},
		},
		{
			name:    "refused_on_cancelled_task",
			j:       (&journal{}).marker(workspace.Marker{AgentID: "coordinator", Status: DoneCancelled}).propose("orchestrator", smallPlan(1)),
			want:    []string{EventMarkerRefused},
			refused: true,
		},
		{
			name: "refused_on_failed_task",
			j: approved().claim("worker_1", "st_1").failed("worker_1", "st_1", "boom").
				review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved)),
			want: []string{EventMarkerRefused}, refused: true,
		},
		{
			name: "rejected_on_finished_task",
			j: (&journal{}).marker(workspace.Marker{AgentID: "coordinator", Status: DoneCancelled}).
				add(workspace.JournalRecord{Kind: workspace.KindDone, Marker: workspace.Marker{AgentID: "worker_1"}, Rejected: "output missing"}),
			want: []string{EventOutputRejected}, refused: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.j.recs
			before := fold(t, smallTask, recs[:len(recs)-1])
			after := fold(t, smallTask, recs)
			if got := eventNames(after.last); !slices.Equal(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if got := len(after.state.Errors) > len(before.state.Errors); got != tc.refused {
				t.Errorf("errors grew: %v, want %v (errors %+v)", got, tc.refused, after.state.Errors)
			}
			for _, e := range after.last {
				if (e.Name == EventClaimRefused || e.Name == EventMarkerRefused || e.Name == EventOutputRejected) && e.Attrs["reason"] == "" {
					t.Errorf("%s without a reason: %+v", e.Name, e)
				}
			}
			if tc.refused && !slices.ContainsFunc(after.last, func(e workspace.Event) bool { return e.Name == EventWorkFailed }) {
				// A refusal changes nothing but the errors, seq and time.
				want := before.state
				got := after.state
				got.Errors, want.Errors = nil, nil
				got.JournalSeq, want.JournalSeq = 0, 0
				got.LastUpdated, want.LastUpdated = time.Time{}, time.Time{}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("a refusal changed more than the errors:\nbefore %+v\nafter  %+v", want, got)
				}
				last := after.state.Errors[len(after.state.Errors)-1]
				if last.Seq != recs[len(recs)-1].Seq || !last.At.Equal(recs[len(recs)-1].TakenAt) || strings.TrimSpace(last.Message) == "" {
					t.Errorf("error entry %+v does not name the record", last)
				}
			}
			if tc.check != nil {
				tc.check(t, after.state)
			}
			checkGolden(t, tc.name, after.state, after.last)
		})
	}
}

// TestApplyWithoutPlan: a state that tracks a plan the caller did not
// hand over refuses records that need it, rather than guessing.
func TestApplyWithoutPlan(t *testing.T) {
	f := fold(t, smallTask, approved().recs)
	rec := workspace.JournalRecord{Seq: 3, TakenAt: t0.Add(3 * time.Minute), Kind: workspace.KindDone,
		Marker: workspace.Marker{AgentID: "worker_1", SubtaskID: "st_1"}}
	for _, plan := range []*workspace.Plan{nil, smallPlan(2)} {
		st, events := checkedApply(t, f.state, plan, rec)
		if got := eventNames(events); !slices.Equal(got, []string{EventMarkerRefused}) {
			t.Errorf("plan %v: events %v, want a refusal", plan, got)
		}
		if st.Subtasks["st_1"].Status != SubtaskPending {
			t.Errorf("plan %v: st_1 = %+v", plan, st.Subtasks["st_1"])
		}
	}
	st, events := checkedApply(t, f.state, f.plan, rec)
	if got := eventNames(events); !slices.Equal(got, []string{EventWorkAssigned, EventWorkCompleted, EventWorkUnblocked}) || st.Subtasks["st_1"].Status != SubtaskCompleted {
		t.Errorf("with the plan: events %v, st_1 %+v", got, st.Subtasks["st_1"])
	}
}

func TestStepTracksPlan(t *testing.T) {
	v1, v2 := smallPlan(1), smallPlan(2)
	st := Init(smallTask)
	st, plan, _ := checkedStep(t, st, nil, workspace.JournalRecord{Seq: 1, TakenAt: t0, Kind: workspace.KindDone, Plan: v1})
	if plan != v1 {
		t.Fatalf("accepted proposal: plan %v, want v1", plan)
	}
	bad := withPlan(smallPlan(3), func(p *workspace.Plan) { p.TaskID = "other" })
	st, plan, _ = checkedStep(t, st, plan, workspace.JournalRecord{Seq: 2, TakenAt: t0, Kind: workspace.KindDone, Plan: bad})
	if plan != v1 || st.PlanVersion != 1 {
		t.Fatalf("refused proposal: plan %v version %d, want v1 kept", plan, st.PlanVersion)
	}
	_, plan, _ = checkedStep(t, st, plan, workspace.JournalRecord{Seq: 3, TakenAt: t0, Kind: workspace.KindDone, Plan: v2})
	if plan != v2 {
		t.Fatalf("re-proposal before review: plan %v, want v2", plan)
	}
}

// TestWorkersAreTheAgentsThatTakeSubtasks: proposing, reviewing and
// cancelling make nobody a worker; claiming a subtask or finishing a
// pending one does.
func TestWorkersAreTheAgentsThatTakeSubtasks(t *testing.T) {
	j := approved().
		review("reviewer", checkpointReview("review_early", "checkpoint_1", VerdictApproved)). // refused: not reached
		claim("worker_1", "st_1").
		done("worker_1", "st_1").
		done("worker_3", "st_3"). // an implicit claim
		review("auditor", workspace.Review{ID: "review_out", Type: ReviewOutput, Target: "st_1", Verdict: VerdictApproved}).
		claim("worker_2", "st_2").
		done("worker_2", "st_2").
		review("reviewer", checkpointReview("review_cp1", "checkpoint_1", VerdictApproved))
	f := fold(t, smallTask, j.recs)
	if f.state.Status != vocab.StatusCompleted {
		t.Fatalf("status %s, want completed; errors %+v", f.state.Status, f.state.Errors)
	}
	var got []string
	for w := range f.state.Workers {
		got = append(got, w)
	}
	slices.Sort(got)
	if want := []string{"worker_1", "worker_2", "worker_3"}; !slices.Equal(got, want) {
		t.Errorf("workers = %v, want %v", got, want)
	}

	cancelled := fold(t, smallTask, (&journal{}).propose("orchestrator", smallPlan(1)).
		marker(workspace.Marker{AgentID: "coordinator", Status: DoneCancelled}).recs)
	if cancelled.state.Status != vocab.StatusCancelled || len(cancelled.state.Workers) != 0 {
		t.Errorf("after a proposal and a cancel: status %s, workers %v; want cancelled and none", cancelled.state.Status, cancelled.state.Workers)
	}
}

// TestReviewEventsNameTheActingAgent: a review's events name the agent
// whose done marker carried it, not the reviewer the file names (the CLI
// writes "cli" when it is given no agent).
func TestReviewEventsNameTheActingAgent(t *testing.T) {
	asCLI := func(r workspace.Review) workspace.Review { r.Reviewer = "cli"; return r }
	j := (&journal{}).propose("orchestrator", smallPlan(1)).
		review("plan_reviewer", asCLI(planReview("review_plan_v1", VerdictApproved, "No logging")))
	f := fold(t, smallTask, j.recs)
	if f.state.PlanStatus != PlanApproved {
		t.Fatalf("plan_status %s, want approved", f.state.PlanStatus)
	}
	names := 0
	for _, e := range f.last {
		if r, ok := e.Attrs["reviewer"]; ok {
			names++
			if r != "plan_reviewer" {
				t.Errorf("%s: reviewer=%s, want plan_reviewer", e.Name, r)
			}
		}
	}
	if names != 2 { // plan_approved and review_issues
		t.Errorf("%d events name a reviewer, want 2: %+v", names, f.last)
	}

	// Without an agent on the marker, the file's reviewer is all there is.
	j = (&journal{}).propose("orchestrator", smallPlan(1)).
		review("", asCLI(planReview("review_plan_v1", VerdictRevisionNeeded)))
	f = fold(t, smallTask, j.recs)
	if len(f.last) == 0 || f.last[0].Name != EventPlanRevisionNeeded || f.last[0].Attrs["reviewer"] != "cli" {
		t.Errorf("events = %+v, want plan_revision_needed naming reviewer cli", f.last)
	}
}
