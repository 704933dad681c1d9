package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/workspaced/workspaced/workspace"
)

// CreateTask writes a new task: its directory, the immutable task.json, the
// root thread threads/<id>.json and a task_created event. The directory is
// created with mkdir, so two creators of one id cannot both succeed: the
// second gets ErrConflict.
func (w *Store) CreateTask(ctx context.Context, req workspace.NewTaskRequest) (workspace.Task, error) {
	if req.ID != "" {
		if err := w.checkTask(req.ID); err != nil {
			return workspace.Task{}, err
		}
	}
	t, data, root, err := workspace.NewTask(req, w.Now())
	if err != nil {
		return workspace.Task{}, err
	}
	req.ID, req.SubmittedBy = t.ID, t.SubmittedBy
	now := t.CreatedAt
	if err := w.root.MkdirAll("tasks", w.DirPerm()); err != nil {
		return workspace.Task{}, fmt.Errorf("create tasks/: %w", err)
	}
	dir := workspace.TaskDir(req.ID)
	if err := w.root.Mkdir(dir, w.DirPerm()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return workspace.Task{}, workspace.TaskExists(req.ID)
		}
		return workspace.Task{}, fmt.Errorf("create task %s: %w", req.ID, err)
	}
	if err := w.WriteJSON(path.Join(dir, "threads", req.ID+".json"), root); err != nil {
		return workspace.Task{}, err
	}
	// task.json last: its presence is what makes the task exist for readers.
	if err := w.Write(path.Join(dir, "task.json"), data); err != nil {
		return workspace.Task{}, err
	}
	_ = w.AppendEvent(ctx, workspace.Event{Time: now, Name: "task_created", TaskID: req.ID, Attrs: map[string]string{"by": req.SubmittedBy}})
	return t, nil
}

// GetTask reads task.json.
func (w *Store) GetTask(ctx context.Context, id string) (workspace.Task, error) {
	if err := w.checkTask(id); err != nil {
		return workspace.Task{}, err
	}
	var t workspace.Task
	err := w.readJSON(path.Join(workspace.TaskDir(id), "task.json"), &t)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Task{}, workspace.NotFoundf("task "+id, "list the tasks to see which exist", "no such task")
	}
	return t, err
}

// ListTasks returns every task with its state when the daemon has written one.
func (w *Store) ListTasks(ctx context.Context) ([]workspace.TaskSummary, error) {
	ids, err := w.TaskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]workspace.TaskSummary, 0, len(ids))
	for _, id := range ids {
		t, err := w.GetTask(ctx, id)
		if err != nil {
			if errors.Is(err, workspace.ErrNotFound) {
				continue // being created
			}
			out = append(out, workspace.TaskSummary{Task: workspace.Task{ID: id}, Error: err.Error()})
			continue
		}
		s := workspace.TaskSummary{Task: t}
		if st, err := w.ReadState(ctx, id); err == nil {
			s.State = &st
		} else if !errors.Is(err, workspace.ErrNotFound) {
			s.Error = err.Error()
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadState reads and decodes state.json. ErrNotFound when the daemon has
// not written one yet; ErrInvalid when it does not parse as a state or its
// head is wrong (workspace.CheckStateHead). It is not checked against its
// schema: the daemon checks every state before it writes it, a state.json
// changed behind its back is checked when the daemon next loads the task,
// and `workspaced validate` checks every file (checking on each read made
// reading a state of 10,000 subtasks take 150 ms).
func (w *Store) ReadState(ctx context.Context, id string) (workspace.State, error) {
	name, data, err := w.stateFile(id)
	if err != nil {
		return workspace.State{}, err
	}
	st, ok := workspace.QuickState(data, w.settings.Limits.MaxDepth)
	if !ok {
		if err := workspace.DecodeStrict(name, data, w.settings.Limits.MaxDepth, &st); err != nil {
			var we *workspace.Error
			if errors.As(err, &we) && we.Hint == "" {
				we.Hint = workspace.StateHint
			}
			return workspace.State{}, err
		}
	}
	if err := workspace.CheckStateHead(id, st); err != nil {
		return workspace.State{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err, Hint: workspace.StateHint}
	}
	return st, nil
}
