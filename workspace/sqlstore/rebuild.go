package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Rebuild folds a task's journal records into the state they give from
// the task's first state, with the state machine and the plan loader
// plans gives for that state, as the daemon's commit does.
func Rebuild(task workspace.Task, recs []workspace.JournalRecord, plans func(workspace.State) func(int) (*workspace.Plan, error)) (workspace.State, error) {
	st := machine.Init(task)
	st, _, stopped := machine.Continue(st, plans(st), recs)
	return st, stopped
}

// DecodeTask reads a task's task.json as its row holds it, for a
// rebuild.
func DecodeTask(taskID, doc string) (workspace.Task, error) {
	var task workspace.Task
	if err := json.Unmarshal([]byte(doc), &task); err != nil {
		return task, fmt.Errorf("task %s does not parse: %w", taskID, err)
	}
	return task, nil
}

// DecodeJournalRecord reads the journal record seq of a task as its row
// holds it; one that does not parse is an error naming its seq.
func DecodeJournalRecord(taskID string, seq int64, body string) (workspace.JournalRecord, error) {
	var rec workspace.JournalRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		return rec, fmt.Errorf("journal record %d of task %s does not parse: %w", seq, taskID, err)
	}
	return rec, nil
}
