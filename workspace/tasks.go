package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/workspaced/workspaced/schemas"
)

// TaskDir is a task's directory relative to the root.
func TaskDir(id string) string { return path.Join("tasks", id) }

// NewTaskRequest is what `task create` takes.
type NewTaskRequest struct {
	ID          string // optional; generated when empty
	Description string
	Context     string
	Constraints []string
	Priority    string
	SubmittedBy string // default "human"
	To          string // the agent the root thread is addressed to, default "coordinator"
}

// NewID returns a fresh id with the given prefix: prefix_<12 hex>.
func NewID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// CreateTask writes a new task: its directory, the immutable task.json, the
// root thread threads/<id>.json and a task_created event. The directory is
// created with mkdir, so two creators of one id cannot both succeed: the
// second gets ErrConflict.
func (w *Workspace) CreateTask(ctx context.Context, req NewTaskRequest) (Task, error) {
	if req.ID != "" {
		if err := w.checkTask(req.ID); err != nil {
			return Task{}, err
		}
	}
	t, data, root, err := NewTask(req, w.Now())
	if err != nil {
		return Task{}, err
	}
	req.ID, req.SubmittedBy = t.ID, t.SubmittedBy
	now := t.CreatedAt
	if err := w.root.MkdirAll("tasks", w.DirPerm()); err != nil {
		return Task{}, fmt.Errorf("create tasks/: %w", err)
	}
	dir := TaskDir(req.ID)
	if err := w.root.Mkdir(dir, w.DirPerm()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Task{}, TaskExists(req.ID)
		}
		return Task{}, fmt.Errorf("create task %s: %w", req.ID, err)
	}
	if err := w.WriteJSON(path.Join(dir, "threads", req.ID+".json"), root); err != nil {
		return Task{}, err
	}
	// task.json last: its presence is what makes the task exist for readers.
	if err := w.Write(path.Join(dir, "task.json"), data); err != nil {
		return Task{}, err
	}
	_ = w.AppendEvent(ctx, Event{Time: now, Name: "task_created", TaskID: req.ID, Attrs: map[string]string{"by": req.SubmittedBy}})
	return t, nil
}

// NewTask checks req and builds what creating it writes at time now: the
// task, task.json's bytes and the root thread. An empty id gets a fresh
// one. Every backend creates tasks with it.
func NewTask(req NewTaskRequest, now time.Time) (Task, []byte, Thread, error) {
	if req.ID == "" {
		req.ID = NewID("task")
	}
	if err := ValidateID("task id", req.ID); err != nil {
		return Task{}, nil, Thread{}, err
	}
	if strings.TrimSpace(req.Description) == "" {
		return Task{}, nil, Thread{}, fieldErr(ErrInvalid, "create task", FieldDescription, "say what the task is", "the description is empty")
	}
	if req.SubmittedBy == "" {
		req.SubmittedBy = "human"
	}
	if req.To == "" {
		req.To = "coordinator"
	}
	for _, who := range []struct{ what, id string }{{"submitted-by", req.SubmittedBy}, {"to", req.To}} {
		if err := ValidateID(who.what, who.id); err != nil {
			return Task{}, nil, Thread{}, err
		}
	}
	t := Task{ID: req.ID, CreatedAt: now, Description: req.Description, Context: req.Context,
		Constraints: req.Constraints, Priority: req.Priority, SubmittedBy: req.SubmittedBy}
	data, err := marshalValidated(schemas.KindTask, t)
	if err != nil {
		return Task{}, nil, Thread{}, err
	}
	root := Thread{ID: req.ID, TaskID: req.ID, From: req.SubmittedBy, To: req.To, Message: req.Description, CreatedAt: now, Status: "active"}
	return t, data, root, nil
}

// TaskExists is the conflict of creating a task whose id is taken.
func TaskExists(id string) error {
	return fieldErr(ErrConflict, "create task "+id, FieldID, "choose another id, or leave it out to get a fresh one", "a task with this id exists")
}

// GetTask reads task.json.
func (w *Workspace) GetTask(ctx context.Context, id string) (Task, error) {
	if err := w.checkTask(id); err != nil {
		return Task{}, err
	}
	var t Task
	err := w.readJSON(path.Join(TaskDir(id), "task.json"), &t)
	if errors.Is(err, ErrNotFound) {
		return Task{}, notFoundf("task "+id, "list the tasks to see which exist", "no such task")
	}
	return t, err
}

// TaskSummary is one line of `task list`.
type TaskSummary struct {
	Task  Task   `json:"task"`
	State *State `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
}

// ListTasks returns every task with its state when the daemon has written one.
func (w *Workspace) ListTasks(ctx context.Context) ([]TaskSummary, error) {
	ids, err := w.TaskIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TaskSummary, 0, len(ids))
	for _, id := range ids {
		t, err := w.GetTask(ctx, id)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // being created
			}
			out = append(out, TaskSummary{Task: Task{ID: id}, Error: err.Error()})
			continue
		}
		s := TaskSummary{Task: t}
		if st, err := w.ReadState(ctx, id); err == nil {
			s.State = &st
		} else if !errors.Is(err, ErrNotFound) {
			s.Error = err.Error()
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadState reads and validates state.json. ErrNotFound when the daemon has
// not written one yet.
func (w *Workspace) ReadState(ctx context.Context, id string) (State, error) {
	if err := w.checkTask(id); err != nil {
		return State{}, err
	}
	name := path.Join(TaskDir(id), "state.json")
	data, err := w.ReadFile(name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return State{}, notFoundf("state of task "+id, "start the daemon to have it written", "no state.json yet")
		}
		return State{}, err
	}
	if err := schemas.Validate(schemas.KindState, data); err != nil {
		return State{}, &Error{Kind: ErrInvalid, Op: "read " + name, Err: err, Hint: stateHint}
	}
	var st State
	if err := decodeStrict(name, data, w.settings.Limits.MaxDepth, &st); err != nil {
		return State{}, err
	}
	return st, nil
}

// marshalValidated encodes v canonically and checks it against its schema.
func marshalValidated(kind schemas.Kind, v any) ([]byte, error) {
	data, err := marshalCanonical(v)
	if err != nil {
		return nil, err
	}
	if err := schemas.Validate(kind, data); err != nil {
		return nil, &Error{Kind: ErrInvalid, Op: "validate " + string(kind), Err: err}
	}
	return data, nil
}
