package workspace

import (
	"context"
	"time"
)

// RetentionSettings is the cleanup policy.
type RetentionSettings struct {
	FullDays    int `json:"full_days,omitempty"`
	SummaryDays int `json:"summary_days,omitempty"`
	// HistoryKeep is how many earlier versions of each memory entry
	// (EntryHistory) a run keeps, the newest.
	HistoryKeep int `json:"history_keep,omitempty"`
}

// RetentionPolicy is the retention policy a run applies: a finished task
// is kept whole for FullDays after its completed_at, then kept as a
// summary (task.json, state.json, events.log) until SummaryDays, then
// removed; of each global or agent memory entry's earlier versions, the
// HistoryKeep newest are kept and older ones removed (0 takes
// DefaultHistoryKeep). The retention package decides and validates with
// it.
type RetentionPolicy struct {
	FullDays    int `json:"full_days"`
	SummaryDays int `json:"summary_days"`
	HistoryKeep int `json:"history_keep"`
}

// KeptVersions is how many earlier versions of each memory entry p
// keeps: HistoryKeep, or DefaultHistoryKeep when it is not positive.
func (p RetentionPolicy) KeptVersions() int {
	if p.HistoryKeep <= 0 {
		return DefaultHistoryKeep
	}
	return p.HistoryKeep
}

// RetentionAction is what a retention run does with a task.
type RetentionAction string

// The actions: the policy's three, and the skip of a run.
const (
	// RetentionKeep leaves the task as it is.
	RetentionKeep RetentionAction = "keep"
	// RetentionSummarize cuts the task down to task.json, state.json and
	// events.log.
	RetentionSummarize RetentionAction = "summarize"
	// RetentionRemove deletes the task.
	RetentionRemove RetentionAction = "remove"
	// RetentionSkip is a task a run left alone although the policy did
	// not simply keep it: its lock was held (busy), its state was
	// unreadable, its name is not a task id, or acting on it failed. The
	// policy never decides it.
	RetentionSkip RetentionAction = "skip"
)

// RetentionDecision is what a run did with one task, and why.
type RetentionDecision struct {
	TaskID string          `json:"task_id"`
	Action RetentionAction `json:"action"`
	// Reason says why, in words fit for a cleanup report.
	Reason string `json:"reason"`
	// Age is now minus completed_at (in nanoseconds in JSON); zero when
	// completed_at is unknown or in the future.
	Age time.Duration `json:"age_ns,omitempty"`
}

// RetentionCounts counts a run's outcomes.
type RetentionCounts struct {
	Kept       int `json:"kept"`
	Summarized int `json:"summarized"`
	Removed    int `json:"removed"`
	Skipped    int `json:"skipped"`
}

// RetentionReport is what a run did (or, in a dry run, would do). Every
// list is sorted by task id.
type RetentionReport struct {
	DryRun bool `json:"dry_run"`
	// Kept lists tasks the policy keeps as they are.
	Kept []RetentionDecision `json:"kept"`
	// Summarized lists tasks cut down to their summary.
	Summarized []RetentionDecision `json:"summarized"`
	// Removed lists tasks that are gone; the caller anonymises their ids
	// in the friction log.
	Removed []RetentionDecision `json:"removed"`
	// Skipped lists tasks left alone for a reason that is not the
	// policy's: busy (the reason names the lock's holder), unreadable
	// state, an invalid task name, or a failure (also in Errors).
	Skipped []RetentionDecision `json:"skipped"`
	Counts  RetentionCounts     `json:"counts"`
	// Recovered lists what was finished or rolled back of a crashed run.
	Recovered []string `json:"recovered,omitempty"`
	// Errors lists failures that did not stop the run; a caller should
	// treat any as a failed cleanup.
	Errors []string `json:"errors,omitempty"`
	// MemoryExpired counts the namespaced memory items past their expiry
	// that the run removed (in a dry run, would remove).
	MemoryExpired int `json:"memory_expired"`
	// HistoryPruned counts the earlier versions of memory entries past
	// the policy's HistoryKeep that the run removed (in a dry run, would
	// remove).
	HistoryPruned int `json:"history_pruned"`
}

// Record counts d under its outcome, files it in that list unless
// discard (see PruneRequest.DiscardDecisions), and reports it to progress
// when set.
func (rep *RetentionReport) Record(d RetentionDecision, discard bool, progress func(RetentionDecision)) {
	c := &rep.Counts
	var list *[]RetentionDecision
	switch d.Action {
	case RetentionKeep:
		c.Kept++
		list = &rep.Kept
	case RetentionSummarize:
		c.Summarized++
		list = &rep.Summarized
	case RetentionRemove:
		c.Removed++
		list = &rep.Removed
	default:
		c.Skipped++
		list = &rep.Skipped
	}
	if !discard {
		*list = append(*list, d)
	}
	if progress != nil {
		progress(d)
	}
}

// PruneRequest asks for one retention run.
type PruneRequest struct {
	// Policy is validated before anything is read.
	Policy RetentionPolicy
	// DryRun decides and reports without changing anything.
	DryRun bool
	// Agent names the run in the lock holder records it leaves.
	Agent string
	// OnProgress, if set, is called once per task as soon as its outcome
	// is known, from the goroutine running the run.
	OnProgress func(RetentionDecision)
	// DiscardDecisions leaves the report's decision lists empty (Counts
	// still counts them), so memory stays flat however many tasks there
	// are; outcomes then reach the caller only through OnProgress.
	DiscardDecisions bool
}

// Retention carries out the retention policy: finished tasks are
// summarised, then removed, each under its task lock; busy tasks are
// skipped.
type Retention interface {
	Prune(ctx context.Context, req PruneRequest) (RetentionReport, error)
}
