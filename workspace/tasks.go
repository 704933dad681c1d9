package workspace

import (
	"crypto/rand"
	"encoding/hex"
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
		return Task{}, nil, Thread{}, FieldErr(ErrInvalid, "create task", FieldDescription, "say what the task is", "the description is empty")
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
	return FieldErr(ErrConflict, "create task "+id, FieldID, "choose another id, or leave it out to get a fresh one", "a task with this id exists")
}

// TaskSummary is one line of `task list`.
type TaskSummary struct {
	Task  Task   `json:"task"`
	State *State `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
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
