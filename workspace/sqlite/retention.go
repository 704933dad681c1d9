package sqlite

import (
	"context"
	"database/sql"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Retention runs sqlstore.Prune: the policy, the locks and the order of
// a run are the same on every database; here are the reads and the
// transaction that acts.

// Prune runs the retention policy over the workspace (sqlstore.Prune).
func (s *Store) Prune(ctx context.Context, req workspace.PruneRequest) (retention.Report, error) {
	return sqlstore.Prune(ctx, pruneStore{s}, req, s.Now())
}

// pruneStore is the sqlstore.PruneStore of a Store.
type pruneStore struct{ s *Store }

// Lock takes a lock without waiting (sqlstore.PruneStore).
func (p pruneStore) Lock(ctx context.Context, name, taskID, lock, agent string) (func(), error) {
	lk, err := p.s.lock(ctx, name, taskID, lock, agent, 0)
	if err != nil {
		return nil, err
	}
	return func() { lk.Release() }, nil
}

// Held says whether a lock is held now, and by whom.
func (p pruneStore) Held(ctx context.Context, name string) (bool, *locking.Holder, error) {
	return p.s.held(name)
}

// TaskInfos reads what the policy needs of every task.
func (p pruneStore) TaskInfos(ctx context.Context) ([]retention.TaskInfo, error) {
	return p.s.taskInfos(ctx, p.s.rdb, "")
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
		sqlstore.ReadStatus(&info, doc)
		return info, nil
	})
}

// taskEntries is the condition on entries that selects a task's: its
// env data and its threads' sessions.
func taskEntries(id string) string {
	return "(scope = 'thread' AND owner = " + id + ") OR (scope = 'session' AND substr(owner, 1, length(" + id + ") + 1) = " + id + " || '/')"
}

// Act reads the task's info again and prunes it in one write
// transaction (the daemon's commit is one too, so none interleaves).
func (p pruneStore) Act(ctx context.Context, id string, fresh func([]retention.TaskInfo) retention.Action) error {
	return p.s.write(ctx, func(tx wtx) error {
		infos, err := p.s.taskInfos(ctx, tx, id)
		if err != nil {
			return err
		}
		if a := fresh(infos); a == retention.Summarize || a == retention.Remove {
			return prune(ctx, tx, id, a)
		}
		return nil
	})
}

// prune summarises or removes task id in tx.
func prune(ctx context.Context, tx wtx, id string, a retention.Action) error {
	for _, q := range sqlstore.PruneStatements(a, taskEntries("$1")) {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return err
		}
	}
	return nil
}
