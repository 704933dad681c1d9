package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Delegation threads: threads/<id>.json of a task is a row of threads,
// built and checked by the workspace package's rules.

// CheckThreadIDs checks the ids of a thread's row before it is read.
func CheckThreadIDs(taskID, id string) error {
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return err
	}
	return workspace.ValidateID("thread id", id)
}

// DecodeThread reads the thread id of a task as its row holds it.
func DecodeThread(taskID, id, doc string) (workspace.Thread, error) {
	var t workspace.Thread
	if err := json.Unmarshal([]byte(doc), &t); err != nil {
		return t, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read thread " + id + " of task " + taskID, Err: err}
	}
	if t.ID != id {
		return workspace.Thread{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read thread " + id, Msg: fmt.Sprintf("row holds thread %q", t.ID)}
	}
	return t, nil
}

// SortThreads orders threads read by id into creation time, then id.
func SortThreads(out []workspace.Thread) {
	// Stable over the id order the query gave.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].CreatedAt.Before(out[j-1].CreatedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
}

// NewThread checks a request for a new thread and builds it
// (workspace.BuildThread): the thread and its document. Its
// thread_created event is the database's: a trigger makes it when the
// thread's row is inserted (SQLite migration 0007, PostgreSQL 0011).
func NewThread(req workspace.NewThreadRequest, now time.Time) (workspace.NewThreadRequest, workspace.Thread, []byte, error) {
	req, err := workspace.CheckThreadRequest(req)
	if err != nil {
		return req, workspace.Thread{}, nil, err
	}
	t, data, err := workspace.BuildThread(req, now)
	if err != nil {
		return req, workspace.Thread{}, nil, err
	}
	return req, t, data, nil
}

// CheckModifyingAgent checks the agent a thread's change is made by (""
// is the daemon, workspaced).
func CheckModifyingAgent(agent string) error {
	if agent == "" {
		return nil
	}
	return workspace.ValidateID("agent", agent)
}

// ChangeThread lets change modify t and, when change says so, stamps t
// with now() and returns its new document; nil is nothing to write.
func ChangeThread(t *workspace.Thread, change func(*workspace.Thread) (bool, error), now func() time.Time) ([]byte, error) {
	write, err := change(t)
	if err != nil || !write {
		return nil, err
	}
	t.UpdatedAt = now()
	return workspace.ThreadDoc(*t)
}
