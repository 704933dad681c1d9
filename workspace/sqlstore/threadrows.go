package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Delegation threads: threads/<id>.json of a task is a row of threads,
// built and checked by the workspace package's rules. A change is a
// read-modify-write in one write transaction, under the thread row's
// lock on PostgreSQL.

// getThread reads a thread; lock ends the query (a row lock, or "").
func getThread(ctx context.Context, q Executor, taskID, id, lock string) (workspace.Thread, error) {
	if err := CheckThreadIDs(taskID, id); err != nil {
		return workspace.Thread{}, err
	}
	var doc string
	err := q.QueryRow(ctx, "SELECT doc FROM threads WHERE task_id = $1 AND id = $2"+lock, taskID, id).Scan(&doc)
	if errors.Is(err, ErrNoRows) {
		return workspace.Thread{}, workspace.NoSuchThread(taskID, id)
	}
	if err != nil {
		return workspace.Thread{}, err
	}
	return DecodeThread(taskID, id, doc)
}

// GetThread reads one thread of a task.
func (s *Store) GetThread(ctx context.Context, taskID, id string) (workspace.Thread, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	return getThread(ctx, s.r, taskID, id, "")
}

// ListThreads lists a task's threads by creation time, then id.
func (s *Store) ListThreads(ctx context.Context, taskID string) ([]workspace.Thread, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return nil, err
	}
	rows, err := s.r.Query(ctx, `SELECT id, doc FROM threads WHERE task_id = $1 ORDER BY id`+s.dl.Collate, taskID)
	out, err := Collect(rows, err, func(r Rows) (workspace.Thread, error) {
		var id, doc string
		if err := r.Scan(&id, &doc); err != nil {
			return workspace.Thread{}, err
		}
		return DecodeThread(taskID, id, doc)
	})
	if err != nil {
		return nil, fmt.Errorf("list threads of task %s: %w", taskID, err)
	}
	SortThreads(out)
	return out, nil
}

// ResolveThread returns the task a thread belongs to; a task id is its
// own root thread.
func (s *Store) ResolveThread(ctx context.Context, threadID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := workspace.ValidateID("thread id", threadID); err != nil {
		return "", err
	}
	var task string
	err := s.r.QueryRow(ctx, `SELECT id FROM (SELECT id, 0 AS o FROM tasks WHERE id = $1
		UNION ALL SELECT task_id, 1 FROM threads WHERE id = $1) AS found ORDER BY o, id`+s.dl.Collate+` LIMIT 1`, threadID).Scan(&task)
	if errors.Is(err, ErrNoRows) {
		return "", workspace.ThreadNotResolved(threadID)
	}
	return task, err
}

// NewThread starts a delegation thread under a parent of the same task;
// the insert of its row makes its thread_created event.
func (s *Store) NewThread(ctx context.Context, req workspace.NewThreadRequest) (workspace.Thread, error) {
	if err := RequireTask(ctx, s.r, req.TaskID); err != nil {
		return workspace.Thread{}, err
	}
	req, t, data, err := NewThread(req, s.Now())
	if err != nil {
		return workspace.Thread{}, err
	}
	err = s.d.Write(ctx, func(tx Executor) error {
		if _, err := getThread(ctx, tx, req.TaskID, req.ParentID, s.dl.Lock("KEY SHARE")); err != nil {
			return fmt.Errorf("thread %s: parent: %w", req.ID, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO threads (task_id, id, doc) VALUES ($1, $2, $3)", req.TaskID, req.ID, string(data)); err != nil {
			if s.d.IsUnique(err) {
				return workspace.ThreadExists(req.TaskID, req.ID)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return workspace.Thread{}, err
	}
	return t, nil
}

// UpdateThread changes a thread's working fields.
func (s *Store) UpdateThread(ctx context.Context, taskID, id, agent string, u workspace.ThreadUpdate) (workspace.Thread, error) {
	return s.ModifyThread(ctx, taskID, id, agent, func(t *workspace.Thread) (bool, error) {
		workspace.ApplyThreadUpdate(t, u)
		return true, nil
	})
}

// ModifyThread reads a thread in one write transaction, under its row
// lock on PostgreSQL, lets change modify it, and writes it back (with
// updated_at) when change says so.
func (s *Store) ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *workspace.Thread) (bool, error)) (workspace.Thread, error) {
	if err := RequireTask(ctx, s.r, taskID); err != nil {
		return workspace.Thread{}, err
	}
	if err := CheckModifyingAgent(agent); err != nil {
		return workspace.Thread{}, err
	}
	var out workspace.Thread
	err := s.d.Write(ctx, func(tx Executor) error {
		t, err := getThread(ctx, tx, taskID, id, s.dl.Lock("NO KEY UPDATE"))
		if err != nil {
			return err
		}
		data, err := ChangeThread(&t, change, s.Now)
		out = t
		if err != nil || data == nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE threads SET doc = $3 WHERE task_id = $1 AND id = $2", taskID, id, string(data))
		return err
	})
	if err != nil {
		return workspace.Thread{}, err
	}
	return out, nil
}
