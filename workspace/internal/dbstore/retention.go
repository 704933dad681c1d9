package dbstore

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/retention"
)

// Retention on a database asks the retention package's pure policy
// (retention.Decide) about every task, as the file tree's Pruner does.
// Summarising keeps what a summarised task directory keeps (the task, its
// state and its events) and deletes its products, threads, journal,
// backups, waiting markers and entries; removing deletes the task and
// everything of it.

// ReadStatus fills info's status and completion time from the task's
// state.json as its row holds it (nil: none yet); a state that does not
// parse is named in info.StateErr.
func ReadStatus(info *retention.TaskInfo, doc *string) {
	if doc == nil {
		return
	}
	var st struct {
		Status      string  `json:"status"`
		CompletedAt *string `json:"completed_at"`
	}
	if err := json.Unmarshal([]byte(*doc), &st); err != nil {
		info.StateErr = err.Error()
		return
	}
	info.Status = st.Status
	if st.CompletedAt != nil {
		info.CompletedAt = *st.CompletedAt
	}
}

// Decide applies the policy to a task, an unreadable state being a skip.
func Decide(info retention.TaskInfo, p retention.Policy, now time.Time) retention.Decision {
	d := retention.Decide(info, p, now)
	if info.StateErr != "" {
		d.Action = retention.Skip
	}
	return d
}

// PruneStatements are the statements, each with the task's id as $1,
// that summarise or remove a task, in order; entries is the dialect's
// condition on entries that selects the task's.
func PruneStatements(a retention.Action, entries string) []string {
	stmts := []string{"DELETE FROM entries WHERE " + entries}
	if a == retention.Remove {
		// The task's rows of every table go with it (ON DELETE CASCADE);
		// events, entries and lock records name it without a key.
		return append(stmts, "DELETE FROM events WHERE task_id = $1", "DELETE FROM locks WHERE task_id = $1", "DELETE FROM tasks WHERE id = $1")
	}
	for _, t := range []string{"products", "threads", "journal", "backups", "markers"} {
		stmts = append(stmts, "DELETE FROM "+t+" WHERE task_id = $1")
	}
	return stmts
}

// SortReport orders each list of a report by task id.
func SortReport(rep *retention.Report) {
	for _, l := range []*[]retention.Decision{&rep.Kept, &rep.Summarized, &rep.Removed, &rep.Skipped} {
		slices.SortFunc(*l, func(a, b retention.Decision) int { return strings.Compare(a.TaskID, b.TaskID) })
	}
}
