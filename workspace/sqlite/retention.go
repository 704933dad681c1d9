package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/internal/dbstore"
)

// Retention on PostgreSQL asks the retention package's pure policy
// (retention.Decide) about every task, as the file tree's Pruner does,
// and acts on what it says in one write transaction per task, under the task's
// lock taken without waiting: a busy task is skipped. Summarising keeps
// what a summarised task directory keeps — the task, its state and its
// events — and deletes its products, threads, journal, backups, waiting
// markers and entries; removing deletes the task and everything of it.
// One run at a time: a run holds the cleanup lock.

// Prune runs the retention policy over the workspace. It fails only when
// it cannot run (an invalid policy, another run holding the cleanup lock,
// ctx done); a task it cannot handle is skipped and its error listed in
// the report.
func (s *Store) Prune(ctx context.Context, req workspace.PruneRequest) (retention.Report, error) {
	rep := retention.Report{DryRun: req.DryRun}
	if err := req.Policy.Validate(); err != nil {
		return rep, err
	}
	if !req.DryRun {
		lk, err := s.lock(ctx, cleanupLock, "", "", req.Agent, 0)
		if err != nil {
			if errors.Is(err, workspace.ErrLocked) {
				return rep, fmt.Errorf("%w: %w", retention.ErrCleanupRunning, err)
			}
			return rep, err
		}
		defer lk.Release()
	}
	p := &pruneRun{s: s, req: req, rep: &rep, now: s.Now()}
	infos, err := s.taskInfos(ctx, s.rdb, "")
	if err != nil {
		return rep, fmt.Errorf("prune: %w", err)
	}
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		p.task(ctx, info)
	}
	dbstore.SortReport(&rep)
	return rep, nil
}

// taskInfos reads what the policy needs of every task (of one task when
// id is not ""), by id. A task is summarised when nothing of it is left
// but the task, its state and its events.
func (s *Store) taskInfos(ctx context.Context, q querier, id string) ([]retention.TaskInfo, error) {
	rows, err := q.QueryContext(ctx, `SELECT t.id, s.doc,
		NOT EXISTS (SELECT 1 FROM products WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM threads WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM journal WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM backups WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM markers WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM entries WHERE `+taskEntries("t.id")+`)
		FROM tasks t LEFT JOIN states s ON s.task_id = t.id
		WHERE $1 = '' OR t.id = $1 ORDER BY t.id`, id)
	return collect(rows, err, func(r *sql.Rows) (retention.TaskInfo, error) {
		var info retention.TaskInfo
		var doc *string
		if err := r.Scan(&info.ID, &doc, &info.Summarized); err != nil {
			return info, err
		}
		dbstore.ReadStatus(&info, doc)
		return info, nil
	})
}

// taskEntries is the condition on entries that selects a task's: its
// env data and its threads' sessions.
func taskEntries(id string) string {
	return "(scope = 'thread' AND owner = " + id + ") OR (scope = 'session' AND substr(owner, 1, length(" + id + ") + 1) = " + id + " || '/')"
}

// pruneRun is one run of Prune.
type pruneRun struct {
	s   *Store
	req workspace.PruneRequest
	rep *retention.Report
	now time.Time
}

// decide applies the policy, an unreadable state being a skip.
func (p *pruneRun) decide(info retention.TaskInfo) retention.Decision {
	return dbstore.Decide(info, p.req.Policy, p.now)
}

// task decides one task and, when the policy summarises or removes it,
// does so under its lock.
func (p *pruneRun) task(ctx context.Context, info retention.TaskInfo) {
	d := p.decide(info)
	if d.Action == retention.Keep || d.Action == retention.Skip {
		p.record(d)
		return
	}
	name := lockName(info.ID, taskLock)
	if p.req.DryRun {
		held, h, err := p.s.held(name)
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
	lk, err := p.s.lock(ctx, name, info.ID, taskLock, p.req.Agent, 0)
	if err != nil {
		var te *locking.TimeoutError
		if errors.As(err, &te) {
			p.record(retention.Busy(d, te.Holder))
			return
		}
		p.fail(d, err)
		return
	}
	defer lk.Release()
	// Decided again from a fresh read, in the transaction that acts: the
	// task may have changed before the lock, and its state row stays
	// locked until the change commits (the daemon's commit waits).
	gone := false
	err = p.s.write(ctx, func(tx wtx) error {
		infos, err := p.s.taskInfos(ctx, tx, info.ID)
		if err != nil {
			return err
		}
		if gone = len(infos) == 0; gone { // removed meanwhile: nothing to report
			return nil
		}
		if d = p.decide(infos[0]); d.Action == retention.Keep || d.Action == retention.Skip {
			return nil
		}
		return prune(ctx, tx, info.ID, d.Action)
	})
	if err != nil {
		p.fail(d, err)
		return
	}
	if !gone {
		p.record(d)
	}
}

// prune summarises or removes task id in tx.
func prune(ctx context.Context, tx wtx, id string, a retention.Action) error {
	for _, q := range dbstore.PruneStatements(a, taskEntries("$1")) {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return err
		}
	}
	return nil
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
