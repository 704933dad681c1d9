package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Tasks and the agent cards: task.json is a row of tasks, its root thread
// a row of threads, and config/agents.json a row of files, each the bytes
// the tree would hold.

// LoadAgents reads config/agents.json; none stored is an empty set.
func (s *Store) LoadAgents(ctx context.Context) (workspace.AgentCards, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var body string
	err := s.pool.QueryRow(ctx, "SELECT body FROM files WHERE path = $1", workspace.AgentsFile).Scan(&body)
	missing := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !missing {
		return workspace.AgentCards{}, fmt.Errorf("read %s: %w", workspace.AgentsFile, err)
	}
	return sqlstore.DecodeAgents(body, !missing)
}

// SaveAgents checks the cards against their schema and replaces them.
func (s *Store) SaveAgents(ctx context.Context, cards workspace.AgentCards) error {
	data, err := sqlstore.AgentsDoc(cards)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO files (path, body) VALUES ($1, $2)
		ON CONFLICT (path) DO UPDATE SET body = excluded.body, updated_at = now()`, workspace.AgentsFile, string(data))
	if err != nil {
		return fmt.Errorf("write %s: %w", workspace.AgentsFile, err)
	}
	return nil
}

// CreateTask creates a task (workspace.NewTask's rules), its root thread
// and its task_created event in one transaction; ErrConflict when the id
// is taken.
func (s *Store) CreateTask(ctx context.Context, req workspace.NewTaskRequest) (workspace.Task, error) {
	t, data, rootDoc, ev, err := sqlstore.NewTask(req, s.Now())
	if err != nil {
		return workspace.Task{}, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO tasks (id, created_at, doc) VALUES ($1, $2, $3)", t.ID, t.CreatedAt, string(data)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO threads (task_id, id, doc) VALUES ($1, $1, $2)", t.ID, string(rootDoc)); err != nil {
			return err
		}
		return insertEvents(ctx, tx, t.ID, ev)
	})
	if isUnique(err) {
		return workspace.Task{}, workspace.TaskExists(t.ID)
	}
	if err != nil {
		return workspace.Task{}, fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return t, nil
}

// insertEvents appends events of a task in tx.
func insertEvents(ctx context.Context, tx pgx.Tx, taskID string, evs ...workspace.Event) error {
	for _, e := range evs {
		if _, err := tx.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", taskID, e.Time, workspace.FormatEvent(e)); err != nil {
			return fmt.Errorf("append event %s: %w", e.Name, err)
		}
	}
	return nil
}

// TaskIDs lists the tasks by id.
func (s *Store) TaskIDs(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT id FROM tasks ORDER BY id COLLATE \"C\"")
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}

// ListTasks lists every task with its state when the daemon wrote one.
func (s *Store) ListTasks(ctx context.Context) ([]workspace.TaskSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.doc, st.doc FROM tasks t LEFT JOIN states st ON st.task_id = t.id
		ORDER BY t.id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.TaskSummary, error) {
		var id, doc string
		var state *string
		if err := r.Scan(&id, &doc, &state); err != nil {
			return workspace.TaskSummary{}, err
		}
		return sqlstore.TaskSummary(id, doc, state), nil
	})
	if out == nil {
		out = []workspace.TaskSummary{}
	}
	return out, err
}

// lockTask takes the task's row lock for a write that must not interleave
// with the daemon's commit of the task (which takes the row FOR SHARE):
// FOR NO KEY UPDATE, so agents' markers (whose foreign key takes KEY
// SHARE) still go in. ErrNotFound when there is no such task.
func lockTask(ctx context.Context, tx pgx.Tx, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := tx.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1 FOR NO KEY UPDATE", taskID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.NotFoundTask(taskID)
	}
	return err
}

// requireTask says ErrNotFound (ErrInvalid for a bad id) unless the task
// exists.
func (s *Store) requireTask(ctx context.Context, q querier, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM tasks WHERE id = $1", taskID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.NotFoundTask(taskID)
	}
	return err
}
