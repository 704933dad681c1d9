package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Tasks, the agent cards, the state and the journal: task.json is a row
// of tasks, its root thread a row of threads, and config/agents.json a
// row of files, each the bytes the tree would hold.

// A *Store is a workspace.Store.
var _ workspace.Store = (*Store)(nil)

// LoadAgents reads config/agents.json; none stored is an empty set.
func (s *Store) LoadAgents(ctx context.Context) (workspace.AgentCards, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var body string
	err := s.rdb.QueryRowContext(ctx, "SELECT body FROM files WHERE path = $1", workspace.AgentsFile).Scan(&body)
	missing := errors.Is(err, sql.ErrNoRows)
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
	if _, err := s.exec(ctx, putFileSQL, workspace.AgentsFile, string(data), ts(now())); err != nil {
		return fmt.Errorf("write %s: %w", workspace.AgentsFile, err)
	}
	return nil
}

// putFileSQL writes a row of files.
const putFileSQL = `INSERT INTO files (path, body, updated_at) VALUES ($1, $2, $3)
	ON CONFLICT (path) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`

// CreateTask creates a task (workspace.NewTask's rules), its root thread
// and its task_created event in one transaction; ErrConflict when the id
// is taken.
func (s *Store) CreateTask(ctx context.Context, req workspace.NewTaskRequest) (workspace.Task, error) {
	t, data, rootDoc, ev, err := sqlstore.NewTask(req, s.Now())
	if err != nil {
		return workspace.Task{}, err
	}
	err = s.write(ctx, func(tx wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tasks (id, created_at, doc) VALUES ($1, $2, $3)", t.ID, ts(t.CreatedAt), string(data)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO threads (task_id, id, doc) VALUES ($1, $1, $2)", t.ID, string(rootDoc)); err != nil {
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
func insertEvents(ctx context.Context, tx wtx, taskID string, evs ...workspace.Event) error {
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", taskID, ts(e.Time), workspace.FormatEvent(e)); err != nil {
			return fmt.Errorf("append event %s: %w", e.Name, err)
		}
	}
	return nil
}

// TaskIDs lists the tasks by id.
func (s *Store) TaskIDs(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	ids, err := strings1(s.rdb.QueryContext(ctx, "SELECT id FROM tasks ORDER BY id"))
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return ids, nil
}

// ListTasks lists every task with its state when the daemon wrote one.
func (s *Store) ListTasks(ctx context.Context) ([]workspace.TaskSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.rdb.QueryContext(ctx, `SELECT t.id, t.doc, st.doc FROM tasks t LEFT JOIN states st ON st.task_id = t.id ORDER BY t.id`)
	out, err := collect(rows, err, func(r *sql.Rows) (workspace.TaskSummary, error) {
		var id, doc string
		var state sql.NullString
		if err := r.Scan(&id, &doc, &state); err != nil {
			return workspace.TaskSummary{}, err
		}
		var st *string
		if state.Valid {
			st = &state.String
		}
		return sqlstore.TaskSummary(id, doc, st), nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// requireTask says ErrNotFound (ErrInvalid for a bad id) unless the task
// exists.
func requireTask(ctx context.Context, q querier, taskID string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM tasks WHERE id = $1", taskID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFoundTask(taskID)
	}
	return err
}

// GetTask returns a task's definition.
func (s *Store) GetTask(ctx context.Context, id string) (workspace.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var doc string
	var t workspace.Task
	err := s.rdb.QueryRowContext(ctx, "SELECT doc FROM tasks WHERE id = $1", id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return t, notFoundTask(id)
	}
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal([]byte(doc), &t)
}

// ReadState returns the task's state as the daemon last wrote it;
// ErrNotFound before the first write.
func (s *Store) ReadState(ctx context.Context, taskID string) (workspace.State, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var doc string
	err := s.rdb.QueryRowContext(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return workspace.State{}, sqlstore.NoState(taskID)
	}
	if err != nil {
		return workspace.State{}, err
	}
	return sqlstore.DecodeState(taskID, doc)
}

// ReadJournal returns the records the daemon took for a task, in
// sequence order.
func (s *Store) ReadJournal(ctx context.Context, taskID string) ([]workspace.JournalRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.rdb.QueryContext(ctx, "SELECT record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	return collect(rows, err, func(r *sql.Rows) (workspace.JournalRecord, error) {
		var body string
		var rec workspace.JournalRecord
		if err := r.Scan(&body); err != nil {
			return rec, err
		}
		return rec, json.Unmarshal([]byte(body), &rec)
	})
}

// DropNamedMarker inserts a marker of kind under a name of the caller's
// choosing, as an agent in any language does; a name the journal or a
// waiting marker already holds is refused at once (ErrConflict), a name
// no file could have (checkMarkerName) with ErrInvalid.
func (s *Store) DropNamedMarker(ctx context.Context, taskID, kind, name string, m workspace.Marker) error {
	if err := checkMarkerName(kind, name); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, "INSERT INTO markers (task_id, kind, name, body, dropped_at) VALUES ($1, $2, $3, $4, $5)",
		taskID, kind, name, string(data), ts(now()))
	switch {
	case isForeignKey(err):
		return notFoundTask(taskID)
	case isRaised(err) || isUnique(err):
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "drop marker " + name + " for task " + taskID, Err: err,
			Hint: "never reuse a marker name: give each marker a new random suffix"}
	case err != nil:
		return fmt.Errorf("drop marker for task %s: %w", taskID, err)
	}
	return nil
}
