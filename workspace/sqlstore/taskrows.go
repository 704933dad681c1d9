package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Tasks, the agent cards, the state and the journal: task.json is a row
// of tasks, its root thread a row of threads, and config/agents.json a
// row of files, each the bytes the tree would hold.

// LoadAgents reads config/agents.json; none stored is an empty set.
func (s *Store) LoadAgents(ctx context.Context) (workspace.AgentCards, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var body string
	err := s.r.QueryRow(ctx, "SELECT body FROM files WHERE path = $1", workspace.AgentsFile).Scan(&body)
	missing := errors.Is(err, ErrNoRows)
	if err != nil && !missing {
		return workspace.AgentCards{}, fmt.Errorf("read %s: %w", workspace.AgentsFile, err)
	}
	return DecodeAgents(body, !missing)
}

// SaveAgents checks the cards against their schema and replaces them.
func (s *Store) SaveAgents(ctx context.Context, cards workspace.AgentCards) error {
	data, err := AgentsDoc(cards)
	if err != nil {
		return err
	}
	if _, err := s.d.WriteOne(ctx, s.q.putFile, workspace.AgentsFile, string(data)); err != nil {
		return fmt.Errorf("write %s: %w", workspace.AgentsFile, err)
	}
	return nil
}

// CreateTask creates a task (workspace.NewTask's rules) and its root
// thread in one transaction, whose insert of the task makes its
// task_created event; ErrConflict when the id is taken.
func (s *Store) CreateTask(ctx context.Context, req workspace.NewTaskRequest) (workspace.Task, error) {
	t, data, rootDoc, err := NewTask(req, s.Now())
	if err != nil {
		return workspace.Task{}, err
	}
	err = s.d.Write(ctx, func(tx Executor) error {
		if _, err := tx.Exec(ctx, "INSERT INTO tasks (id, created_at, doc) VALUES ($1, $2, $3)", t.ID, s.dl.Time(t.CreatedAt), string(data)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO threads (task_id, id, doc) VALUES ($1, $1, $2)", t.ID, string(rootDoc))
		return err
	})
	if s.d.IsUnique(err) {
		return workspace.Task{}, workspace.TaskExists(t.ID)
	}
	if err != nil {
		return workspace.Task{}, fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return t, nil
}

// InsertEvents appends events of a task in tx.
func (s *Store) InsertEvents(ctx context.Context, tx Executor, taskID string, evs ...workspace.Event) error {
	for _, e := range evs {
		if _, err := tx.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", taskID, s.dl.Time(e.Time), workspace.FormatEvent(e)); err != nil {
			return fmt.Errorf("append event %s: %w", e.Name, err)
		}
	}
	return nil
}

// TaskIDs lists the tasks by id.
func (s *Store) TaskIDs(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	ids, err := Strings(s.r.Query(ctx, "SELECT id FROM tasks ORDER BY id"+s.dl.Collate))
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return ids, nil
}

// ListTasks lists every task with its state when the daemon wrote one.
func (s *Store) ListTasks(ctx context.Context) ([]workspace.TaskSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	rows, err := s.r.Query(ctx, `SELECT t.id, t.doc, st.doc FROM tasks t LEFT JOIN states st ON st.task_id = t.id
		ORDER BY t.id`+s.dl.Collate)
	out, err := Collect(rows, err, func(r Rows) (workspace.TaskSummary, error) {
		var id, doc string
		var state *string
		if err := r.Scan(&id, &doc, &state); err != nil {
			return workspace.TaskSummary{}, err
		}
		return TaskSummary(id, doc, state), nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// GetTask returns a task's definition; an id that is not one is
// ErrInvalid, as on every store.
func (s *Store) GetTask(ctx context.Context, id string) (workspace.Task, error) {
	if err := workspace.ValidateID("task id", id); err != nil {
		return workspace.Task{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var doc string
	var t workspace.Task
	err := s.r.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1", id).Scan(&doc)
	if errors.Is(err, ErrNoRows) {
		return t, NotFoundTask(id)
	}
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal([]byte(doc), &t)
}

// ReadState returns the task's state as the daemon last wrote it;
// ErrNotFound before the first write.
func (s *Store) ReadState(ctx context.Context, taskID string) (workspace.State, error) {
	doc, err := s.stateDoc(ctx, taskID)
	if err != nil {
		return workspace.State{}, err
	}
	return DecodeState(taskID, doc)
}

// ReadStateHead returns the head of the task's state
// (workspace.ParseStateHead): the row's document scanned, not decoded;
// ErrNotFound before the first write.
func (s *Store) ReadStateHead(ctx context.Context, taskID string) (workspace.StateHead, error) {
	doc, err := s.stateDoc(ctx, taskID)
	if err != nil {
		return workspace.StateHead{}, err
	}
	return workspace.ParseStateHead(taskID, []byte(doc))
}

// stateDoc reads the task's state row's document; ErrNotFound before the
// first write.
func (s *Store) stateDoc(ctx context.Context, taskID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var doc string
	err := s.r.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", taskID).Scan(&doc)
	if errors.Is(err, ErrNoRows) {
		return "", NoState(taskID)
	}
	return doc, err
}

// ReadJournal returns the records the daemon took for a task, in
// sequence order.
func (s *Store) ReadJournal(ctx context.Context, taskID string) ([]workspace.JournalRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	rows, err := s.r.Query(ctx, "SELECT record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	return Collect(rows, err, func(r Rows) (workspace.JournalRecord, error) {
		var body string
		var rec workspace.JournalRecord
		if err := r.Scan(&body); err != nil {
			return rec, err
		}
		return rec, json.Unmarshal([]byte(body), &rec)
	})
}
