package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
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

// PruneStore is what a retention run needs of a database store.
type PruneStore interface {
	// Lock takes the lock of name (task taskID's lock when taskID is
	// not "") as agent without waiting; a held one is a
	// *locking.TimeoutError naming its holder, or ErrLocked.
	Lock(ctx context.Context, name, taskID, lock, agent string) (release func(), err error)
	// Held says whether the lock of name is held now, and by whom.
	Held(ctx context.Context, name string) (bool, *locking.Holder, error)
	// TaskInfos reads what the policy needs of every task, by id.
	TaskInfos(ctx context.Context) ([]retention.TaskInfo, error)
	// Act reads task id's info again in one transaction (none when the
	// task is gone), asks fresh what to do, and summarises or removes
	// the task in that transaction when fresh says so.
	Act(ctx context.Context, id string, fresh func([]retention.TaskInfo) retention.Action) error
}

// Prune runs the retention policy of req over ps's workspace at now: it
// decides every task, then summarises or removes each under its lock
// taken without waiting (a busy task is skipped), deciding again from a
// fresh read in the transaction that acts. One run at a time: a run
// holds CleanupLock. It fails only when it cannot run (an invalid policy,
// another run holding the lock, ctx done); a task it cannot handle is
// skipped and its error listed in the report.
func Prune(ctx context.Context, ps PruneStore, req workspace.PruneRequest, now time.Time) (retention.Report, error) {
	rep := retention.Report{DryRun: req.DryRun}
	if err := retention.Validate(req.Policy); err != nil {
		return rep, err
	}
	if !req.DryRun {
		release, err := ps.Lock(ctx, CleanupLock, "", "", req.Agent)
		if err != nil {
			if errors.Is(err, workspace.ErrLocked) {
				return rep, fmt.Errorf("%w: %w", retention.ErrCleanupRunning, err)
			}
			return rep, err
		}
		defer release()
	}
	p := &pruneRun{ps: ps, req: req, rep: &rep, now: now}
	infos, err := ps.TaskInfos(ctx)
	if err != nil {
		return rep, fmt.Errorf("prune: %w", err)
	}
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		p.task(ctx, info)
	}
	SortReport(&rep)
	return rep, nil
}

// pruneRun is one run of Prune.
type pruneRun struct {
	ps  PruneStore
	req workspace.PruneRequest
	rep *retention.Report
	now time.Time
}

// task decides one task and, when the policy summarises or removes it,
// does so under its lock.
func (p *pruneRun) task(ctx context.Context, info retention.TaskInfo) {
	d := Decide(info, p.req.Policy, p.now)
	if d.Action == retention.Keep || d.Action == retention.Skip {
		p.record(d)
		return
	}
	name := LockName(info.ID, TaskLock)
	if p.req.DryRun {
		held, h, err := p.ps.Held(ctx, name)
		switch {
		case err != nil:
			p.fail(d, err)
		case held:
			p.record(retention.Busy(d, h))
		default:
			p.record(d)
		}
		return
	}
	release, err := p.ps.Lock(ctx, name, info.ID, TaskLock, p.req.Agent)
	if err != nil {
		var te *locking.TimeoutError
		if errors.As(err, &te) {
			p.record(retention.Busy(d, te.Holder))
			return
		}
		p.fail(d, err)
		return
	}
	defer release()
	// Decided again from a fresh read, in the transaction that acts: the
	// task may have changed before the lock, and the store keeps it
	// locked until the change commits (the daemon's commit waits).
	gone := false
	err = p.ps.Act(ctx, info.ID, func(infos []retention.TaskInfo) retention.Action {
		if gone = len(infos) == 0; gone { // removed meanwhile: nothing to report
			return retention.Keep
		}
		d = Decide(infos[0], p.req.Policy, p.now)
		return d.Action
	})
	if err != nil {
		p.fail(d, err)
		return
	}
	if !gone {
		p.record(d)
	}
}

// fail records a task that could not be handled as skipped, and the error.
func (p *pruneRun) fail(d retention.Decision, err error) {
	d, msg := retention.Failed(d, err)
	p.rep.Errors = append(p.rep.Errors, msg)
	p.record(d)
}

// record files d under its outcome and reports progress.
func (p *pruneRun) record(d retention.Decision) {
	p.rep.Record(d, p.req.DiscardDecisions, p.req.OnProgress)
}
