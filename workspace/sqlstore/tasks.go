package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// DecodeState reads a task's state.json as its row holds it; a document
// that does not parse as a state, or whose head is wrong
// (workspace.CheckStateHead), is ErrInvalid. It is not checked against
// its schema again: only the daemon writes the row, and it checked the
// document first (checking on each read made reading a state of 10,000
// subtasks cost more than 100 ms).
func DecodeState(taskID, doc string) (workspace.State, error) {
	data := []byte(doc)
	st, ok := workspace.QuickState(data, 0)
	if !ok {
		if err := json.Unmarshal(data, &st); err != nil {
			return st, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read state of task " + taskID, Err: err,
				Hint: "restore the newest valid backup of the state"}
		}
	}
	if err := workspace.CheckStateHead(taskID, st); err != nil {
		return workspace.State{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read state of task " + taskID, Err: err,
			Hint: "restore the newest valid backup of the state"}
	}
	return st, nil
}

// NotFoundTask is the ErrNotFound of a task id no row holds.
func NotFoundTask(id string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "task " + id, Msg: "no such task", Hint: "list the tasks with workspaced status"}
}

// NoState is the ErrNotFound of a task's state before the daemon's first
// write.
func NoState(taskID string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "read state of task " + taskID,
		Msg: "no state written yet", Hint: "the daemon writes it once it has taken a marker; is serve running?"}
}

// NewTask builds a task (workspace.NewTask's rules) and its root
// thread's document, stored beside task.json. Its task_created event is
// the database's: a trigger makes it when the task's row is inserted
// (SQLite migration 0007, PostgreSQL 0011), whoever inserts it.
func NewTask(req workspace.NewTaskRequest, now time.Time) (t workspace.Task, data, rootDoc []byte, err error) {
	t, data, root, err := workspace.NewTask(req, now)
	if err != nil {
		return workspace.Task{}, nil, nil, err
	}
	if rootDoc, err = workspace.ThreadDoc(root); err != nil {
		return workspace.Task{}, nil, nil, err
	}
	return t, data, rootDoc, nil
}

// TaskSummary is a row of a task listing: the task's id, its task.json
// and its state.json (nil before the daemon's first write). A document
// that does not read is named in the summary's Error.
func TaskSummary(id, doc string, state *string) workspace.TaskSummary {
	sum := workspace.TaskSummary{Task: workspace.Task{ID: id}}
	if err := json.Unmarshal([]byte(doc), &sum.Task); err != nil {
		sum.Error = fmt.Sprintf("task %s: %v", id, err)
		return sum
	}
	if state != nil {
		st, err := DecodeState(id, *state)
		if err != nil {
			sum.Error = err.Error()
		} else {
			sum.State = &st
		}
	}
	return sum
}

// DecodeAgents reads config/agents.json as its row holds it (had false
// when there is none: an empty set).
func DecodeAgents(body string, had bool) (workspace.AgentCards, error) {
	if !had {
		return workspace.AgentCards{Agents: []workspace.AgentCard{}}, nil
	}
	if err := schemas.Validate(schemas.KindAgents, []byte(body)); err != nil {
		return workspace.AgentCards{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + workspace.AgentsFile, Err: err,
			Hint: "fix the cards; validating the workspace lists every problem"}
	}
	var c workspace.AgentCards
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return workspace.AgentCards{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + workspace.AgentsFile, Err: err}
	}
	if c.Agents == nil {
		c.Agents = []workspace.AgentCard{}
	}
	return c, nil
}

// AgentsDoc is config/agents.json of cards, checked against its schema.
func AgentsDoc(cards workspace.AgentCards) ([]byte, error) {
	if cards.Agents == nil {
		cards.Agents = []workspace.AgentCard{}
	}
	data, err := atomicfile.Marshal(cards)
	if err != nil {
		return nil, err
	}
	if err := schemas.Validate(schemas.KindAgents, data); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "write " + workspace.AgentsFile, Err: err, Hint: "every card needs a name; see the agents schema"}
	}
	return data, nil
}
