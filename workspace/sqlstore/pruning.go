package sqlstore

import (
	"context"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// Prune runs the retention policy over the workspace (the function
// Prune): the policy, the locks and the order of a run are the same on
// every database; the driver takes and reads the locks.
func (s *Store) Prune(ctx context.Context, req workspace.PruneRequest) (retention.Report, error) {
	now := s.Now()
	rep, err := Prune(ctx, pruneStore{s}, req, now)
	if err != nil {
		return rep, err
	}
	if rep.MemoryExpired, err = s.PruneMemory(ctx, now, req.DryRun); err != nil {
		return rep, err
	}
	rep.HistoryPruned, err = s.PruneHistory(ctx, req.Policy.KeptVersions(), req.DryRun)
	return rep, err
}

// pruneStore is the PruneStore of a Store.
type pruneStore struct{ s *Store }

// Lock takes a lock without waiting (PruneStore).
func (p pruneStore) Lock(ctx context.Context, name, taskID, lock, agent string) (func(), error) {
	l, err := p.s.d.Lock(ctx, name, taskID, lock, agent, 0)
	if err != nil {
		return nil, err
	}
	return func() { l.Release() }, nil
}

// Held says whether a lock is held now, and by whom.
func (p pruneStore) Held(ctx context.Context, name string) (bool, *locking.Holder, error) {
	return p.s.d.Held(ctx, name)
}

// TaskInfos reads what the policy needs of every task.
func (p pruneStore) TaskInfos(ctx context.Context) ([]retention.TaskInfo, error) {
	return p.s.taskInfos(ctx, p.s.r, "")
}

// taskInfos reads what the policy needs of every task (of one task when
// id is not ""), by id. A task is summarised when nothing of it is left
// but the task, its state and its events.
func (s *Store) taskInfos(ctx context.Context, q Executor, id string) ([]retention.TaskInfo, error) {
	rows, err := q.Query(ctx, `SELECT t.id, s.doc,
		NOT EXISTS (SELECT 1 FROM products WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM threads WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM journal WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM backups WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM markers WHERE task_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM entries WHERE `+s.taskEntries("t.id")+`)
		FROM tasks t LEFT JOIN states s ON s.task_id = t.id
		WHERE $1 = '' OR t.id = $1 ORDER BY t.id`+s.dl.Collate, id)
	return Collect(rows, err, func(r Rows) (retention.TaskInfo, error) {
		var info retention.TaskInfo
		var doc *string
		if err := r.Scan(&info.ID, &doc, &info.Summarized); err != nil {
			return info, err
		}
		ReadStatus(&info, doc)
		return info, nil
	})
}

// taskEntries is the condition on entries that selects a task's: its
// env data and its threads' sessions.
func (s *Store) taskEntries(id string) string {
	return "(scope = 'thread' AND owner = " + id + ") OR (scope = 'session' AND " + s.dl.HasPrefix("owner", id+" || '/'") + ")"
}

// Act reads the task's info again and prunes it in one write
// transaction, under its state row's lock on PostgreSQL (the daemon's
// commit waits for it; on SQLite it is one write transaction too, so none
// interleaves).
func (p pruneStore) Act(ctx context.Context, id string, fresh func([]retention.TaskInfo) retention.Action) error {
	s := p.s
	return s.d.Write(ctx, func(tx Executor) error {
		if lock := s.dl.Lock("UPDATE"); lock != "" {
			if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.dl.StateRows+" WHERE task_id = $1"+lock, id); err != nil {
				return err
			}
		}
		infos, err := s.taskInfos(ctx, tx, id)
		if err != nil {
			return err
		}
		if a := fresh(infos); a == retention.Summarize || a == retention.Remove {
			// Retention's deletes of entries are no agent's: no events.
			if _, err := tx.Exec(ctx, s.dl.QuietEntries(true)); err != nil {
				return err
			}
			if err := s.d.Batch(ctx, tx, PruneStatements(a, s.taskEntries("$1")), id); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, s.dl.QuietEntries(false))
			return err
		}
		return nil
	})
}
