// Package retention decides which finished tasks a workspace keeps whole,
// which it cuts down to their summary and which it removes.
//
// The policy is a pure function (Decide, Apply) over TaskInfo values, in the
// manner of restic's forget: it reads no files and no clock, so the same
// inputs always give the same decisions and reasons. Each store carries
// the decisions out (workspace.Retention): the file tree's pruner
// (workspace/files) and the SQL store read each task's state, ask the
// policy and act under the task's lock.
//
// Friction entries are not this package's business: the caller anonymises
// the ids the Report lists as removed.
package retention

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Policy defaults (workspace.json "retention") and bounds.
const (
	// DefaultFullDays is how long a finished task is kept whole.
	DefaultFullDays = 7
	// DefaultSummaryDays is how long a finished task is kept at all.
	DefaultSummaryDays = 30
	// DefaultHistoryKeep is how many earlier versions of each memory
	// entry are kept.
	DefaultHistoryKeep = workspace.DefaultHistoryKeep
	// MaxDays bounds both policy fields (100 years), far below the
	// ~292 years a time.Duration can hold.
	MaxDays = 36500
)

// Day is the unit of the policy: a fixed 24 hours, not a calendar day, so a
// daylight-saving change never moves a boundary.
const Day = 24 * time.Hour

// Errors returned by this package.
var (
	// ErrInvalidPolicy reports a policy that Validate refuses.
	ErrInvalidPolicy = errors.New("invalid retention policy")
	// ErrCleanupRunning reports another Pruner already running over the
	// same tree. The error also satisfies errors.Is(err, locking.ErrLocked)
	// and names the holder.
	ErrCleanupRunning = errors.New("another cleanup is running")
)

// The policy's values are the model's: the store contract's Retention
// capability names them.
type (
	Policy   = workspace.RetentionPolicy
	Action   = workspace.RetentionAction
	Decision = workspace.RetentionDecision
	Counts   = workspace.RetentionCounts
	Report   = workspace.RetentionReport
)

// The actions.
const (
	Keep      = workspace.RetentionKeep
	Summarize = workspace.RetentionSummarize
	Remove    = workspace.RetentionRemove
	Skip      = workspace.RetentionSkip
)

// DefaultPolicy returns the default policy: 7 days whole, 30 days in all,
// 100 earlier versions of each memory entry.
func DefaultPolicy() Policy {
	return Policy{FullDays: DefaultFullDays, SummaryDays: DefaultSummaryDays, HistoryKeep: DefaultHistoryKeep}
}

// Validate refuses a policy that would destroy more than anyone could mean:
// FullDays below 0, SummaryDays below 1 (the zero Policy would remove every
// finished task at once), SummaryDays below FullDays, or either above
// MaxDays. FullDays 0 (summarise as soon as a task finishes) and FullDays
// equal to SummaryDays (no summary stage) are allowed. The error wraps
// ErrInvalidPolicy.
func Validate(p Policy) error {
	switch {
	case p.FullDays < 0:
		return fmt.Errorf("%w: full_days %d is negative", ErrInvalidPolicy, p.FullDays)
	case p.SummaryDays < 1:
		return fmt.Errorf("%w: summary_days %d would remove every finished task at once; use at least 1", ErrInvalidPolicy, p.SummaryDays)
	case p.SummaryDays < p.FullDays:
		return fmt.Errorf("%w: summary_days %d is less than full_days %d", ErrInvalidPolicy, p.SummaryDays, p.FullDays)
	case p.HistoryKeep < 0:
		return fmt.Errorf("%w: history_keep %d is negative", ErrInvalidPolicy, p.HistoryKeep)
	case p.SummaryDays > MaxDays:
		return fmt.Errorf("%w: summary_days %d is more than %d", ErrInvalidPolicy, p.SummaryDays, MaxDays)
	}
	return nil
}

// TaskInfo is what the policy needs to know about one task, as read from
// its directory. The zero value (besides ID) is a task with no state.json.
type TaskInfo struct {
	ID string `json:"id"`
	// Status is state.json's status, "" when there is no state.json.
	Status string `json:"status,omitempty"`
	// CompletedAt is state.json's completed_at as written, unparsed; it
	// may be empty or malformed.
	CompletedAt string `json:"completed_at,omitempty"`
	// Summarized is true when the directory holds nothing but the summary
	// files (task.json, state.json, events.log) and dot entries.
	Summarized bool `json:"summarized,omitempty"`
	// StateErr is non-empty when state.json exists but could not be read
	// or decoded; Status and CompletedAt are then empty.
	StateErr string `json:"state_err,omitempty"`
	// LocksOnly is true when the directory holds nothing but .locks/ and
	// nothing but regular files in it: no task, only the lock files a
	// process left by taking the lock of a task already removed.
	LocksOnly bool `json:"locks_only,omitempty"`
}

// ReasonLocksOnly is the reason given for removing a directory that holds
// nothing but lock files.
const ReasonLocksOnly = "holds nothing but lock files (left by a lock taken on a task already removed)"

// Decide applies p to one task at the instant now. p must be valid
// (Validate). The rules, in order:
//
//   - a directory holding nothing but lock files → remove, whatever the
//     policy: it is no task (a store removes it only once none of its
//     locks is held);
//   - state.json unreadable → keep (the reason names the problem);
//   - not finished (planning, executing, no state.json, or any status other
//     than completed, failed, cancelled) → keep: active tasks are never
//     touched, whatever their age;
//   - finished with completed_at missing or not RFC 3339 (any offset,
//     any fraction, upper or lower case T and Z) → keep;
//   - completed_at after now (clock skew) → keep;
//   - age < FullDays → keep;
//   - FullDays ≤ age < SummaryDays → summarize, or keep if already summarised;
//   - age ≥ SummaryDays → remove.
//
// Age counts from completed_at only, never from file times. A boundary
// belongs to the older side: a task exactly FullDays old is summarised, one
// exactly SummaryDays old is removed.
func Decide(t TaskInfo, p Policy, now time.Time) Decision {
	d := Decision{TaskID: t.ID, Action: Keep}
	if t.LocksOnly {
		d.Action, d.Reason = Remove, ReasonLocksOnly
		return d
	}
	if t.StateErr != "" {
		d.Reason = "state.json unreadable: " + t.StateErr
		return d
	}
	switch {
	case vocab.Finished(t.Status):
	case t.Status == "":
		d.Reason = "active: no state.json yet"
		return d
	case vocab.Active(t.Status):
		d.Reason = "active: status " + t.Status
		return d
	default:
		d.Reason = fmt.Sprintf("unknown status %q, treated as active", t.Status)
		return d
	}
	if strings.TrimSpace(t.CompletedAt) == "" {
		d.Reason = t.Status + " but completed_at is missing"
		return d
	}
	done, err := parseRFC3339(t.CompletedAt)
	if err != nil {
		d.Reason = fmt.Sprintf("%s but completed_at %q is not RFC 3339", t.Status, t.CompletedAt)
		return d
	}
	if done.After(now) {
		d.Reason = fmt.Sprintf("completed_at %s is in the future", t.CompletedAt)
		return d
	}
	d.Age = now.Sub(done)
	full := time.Duration(p.FullDays) * Day
	summary := time.Duration(p.SummaryDays) * Day
	switch {
	case d.Age < full:
		d.Reason = fmt.Sprintf("%s %s ago, younger than full_days %d", t.Status, formatAge(d.Age), p.FullDays)
	case d.Age < summary && t.Summarized:
		d.Reason = fmt.Sprintf("%s %s ago, already summarised, younger than summary_days %d", t.Status, formatAge(d.Age), p.SummaryDays)
	case d.Age < summary:
		d.Action = Summarize
		d.Reason = fmt.Sprintf("%s %s ago, at least full_days %d", t.Status, formatAge(d.Age), p.FullDays)
	default:
		d.Action = Remove
		d.Reason = fmt.Sprintf("%s %s ago, at least summary_days %d", t.Status, formatAge(d.Age), p.SummaryDays)
	}
	return d
}

// Apply decides every task (see Decide) and returns the decisions sorted by
// task id. It does not modify tasks.
func Apply(tasks []TaskInfo, p Policy, now time.Time) []Decision {
	out := make([]Decision, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, Decide(t, p, now))
	}
	slices.SortFunc(out, func(a, b Decision) int { return strings.Compare(a.TaskID, b.TaskID) })
	return out
}

// parseRFC3339 accepts any RFC 3339 timestamp, including the lower-case
// "t" and "z" that section 5.6 of RFC 3339 allows and time.RFC3339 does
// not.
func parseRFC3339(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, strings.ToUpper(s))
}

// formatAge renders an age for people: under a day as a duration to the
// second ("2m24s", "5h3m10s"), from a day on as days and hours ("7d0h"),
// with the minutes left when the age is not a whole number of hours
// ("6d23h59m"). It truncates, never rounds up, so an age shown as below
// a limit is below it.
func formatAge(d time.Duration) string {
	if d < Day {
		return vocab.Duration(d.Truncate(time.Second))
	}
	days := d / Day
	rest := d - days*Day
	hours := rest / time.Hour
	s := fmt.Sprintf("%dd%dh", days, hours)
	if m := (rest - hours*time.Hour) / time.Minute; m != 0 {
		s += fmt.Sprintf("%dm", m)
	}
	return s
}

// Busy is d skipped because the task's lock is held by h (a lock's
// holder record), saying what it would have done.
func Busy(d Decision, h fmt.Stringer) Decision {
	d.Reason = fmt.Sprintf("busy: task lock held by %s; would %s: %s", h, d.Action, d.Reason)
	d.Action = Skip
	return d
}

// Failed is d skipped because handling it failed with err, and the
// error's message for the report.
func Failed(d Decision, err error) (Decision, string) {
	what := "handle"
	if d.Action == Summarize || d.Action == Remove {
		what = string(d.Action)
	}
	msg := fmt.Sprintf("%s task %s: %v", what, d.TaskID, err)
	d.Action, d.Reason = Skip, "failed: "+msg
	return d, msg
}
