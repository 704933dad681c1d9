package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/machine"
)

// ValidateState parses a state.json of task id and checks it against
// its schema and the task, as the daemon checks one before it trusts it.
func ValidateState(id string, data []byte) (workspace.State, error) {
	return files.ValidateState(id, data)
}

// StateCheck is what CheckState found for a task: the state derived
// again from the task and its journal, beside the state written; or, for
// a task retention has summarised (its journal gone), what is left to
// check (Summary).
type StateCheck struct {
	// OnTree says the workspace is a file tree: the state written is
	// its state.json.
	OnTree bool
	// Rebuilt is the state the task and its journal give.
	Rebuilt workspace.State
	// Written is the state written, as read; WrittenErr the failure to
	// read it (workspace.ErrNotFound: none yet).
	Written    []byte
	WrittenErr error
	// Summary is set, and the rest unset, for a summarised task.
	Summary *SummaryCheck
}

// SummaryCheck is what can still be checked of a task retention has
// summarised: its state.json and its events.log.
type SummaryCheck struct {
	TaskID     string `json:"task_id"`
	Summarised bool   `json:"summarised"`
	// StateValid: state.json parses, validates and says the task is
	// finished; Status and JournalSeq are its.
	StateValid bool   `json:"state_valid"`
	Status     string `json:"status,omitempty"`
	JournalSeq int64  `json:"journal_seq"`
	// FinalEvent is the last event of events.log that ends the task
	// (task_completed, task_failed, task_cancelled), if any, at FinalAt;
	// EventsAgree says whether it is the one the state's status calls
	// for.
	FinalEvent  string    `json:"final_event,omitempty"`
	FinalAt     time.Time `json:"-"`
	EventsAgree bool      `json:"events_agree"`
	Problems    []string  `json:"problems"`
}

// CheckState derives task id's state again from the task and its journal
// alone, folding the records as the daemon folds them, and reads the
// state written beside it; it writes nothing. On a tree it reads
// task.json and journal/; on a database (workspace.Rebuilder) the journal
// rows in one snapshot. A summarised task is checked by what retention
// kept (SummaryCheck).
func CheckState(ctx context.Context, st workspace.Store, id string) (StateCheck, error) {
	w, err := Tree("", st)
	if err != nil {
		return checkStateDB(ctx, st, id)
	}
	if _, err := w.GetTask(ctx, id); err != nil {
		return StateCheck{}, err
	}
	info, err := files.ReadTaskInfo(w.Root(), id)
	if err != nil {
		return StateCheck{}, err
	}
	// Only the summary files left, and the task finished by its state (or,
	// when state.json cannot be read, by its events): retention cut it
	// down. A task the daemon has only seen (task.json, state.json and
	// events.log, no journal yet) also holds nothing else, but is not
	// finished.
	if info.Summarized && (vocab.Finished(info.Status) || (info.StateErr != "" && endedInEvents(ctx, w, id))) {
		data, err := w.ReadFile(workspace.TaskDir(id) + "/state.json")
		return StateCheck{OnTree: true, Summary: checkSummary(ctx, w, id, data, err)}, nil
	}
	rebuilt, err := files.Rebuild(ctx, w, id)
	if err != nil {
		return StateCheck{}, fmt.Errorf("rebuild state of task %s: %w", id, err)
	}
	old, err := w.ReadFile(workspace.TaskDir(id) + "/state.json")
	return StateCheck{OnTree: true, Rebuilt: rebuilt, Written: old, WrittenErr: err}, nil
}

// checkStateDB is CheckState on a workspace kept in a database
// (workspace.Rebuilder): the task's journal rows folded as the daemon
// folds them, beside the state row. A task retention summarised
// (finished, its journal deleted) is checked as on files.
func checkStateDB(ctx context.Context, st workspace.Store, id string) (StateCheck, error) {
	s, ok := workspace.As[workspace.Rebuilder](st)
	if !ok {
		return StateCheck{}, FilesOnly("state rebuild")
	}
	rebuilt, err := s.Rebuild(id)
	if err != nil {
		if errors.Is(err, workspace.ErrNotFound) {
			return StateCheck{}, err
		}
		return StateCheck{}, fmt.Errorf("rebuild state of task %s: %w", id, err)
	}
	old, readErr := st.ReadTaskFile(ctx, id, "state.json", -1)
	if rebuilt.JournalSeq == 0 && readErr == nil {
		var written workspace.State
		if json.Unmarshal(old, &written) == nil && written.JournalSeq > 0 && vocab.Finished(written.Status) {
			return StateCheck{Summary: checkSummary(ctx, st, id, old, nil)}, nil
		}
	}
	return StateCheck{Rebuilt: rebuilt, Written: old, WrittenErr: readErr}, nil
}

// finalEvents are the events that end a task, by the status they end it
// with.
var finalEvents = map[string]string{
	vocab.StatusCompleted: machine.EventTaskCompleted,
	vocab.StatusFailed:    machine.EventTaskFailed,
	vocab.StatusCancelled: machine.EventTaskCancelled,
}

// endedInEvents reports whether a task's events.log holds an event ending
// the task.
func endedInEvents(ctx context.Context, w *files.Store, id string) bool {
	evs, _, _ := w.ReadEvents(ctx, id)
	for _, ev := range evs {
		for _, name := range finalEvents {
			if ev.Name == name {
				return true
			}
		}
	}
	return false
}

// checkSummary checks a task retention has summarised: its journal is
// gone, so only state.json and events.log can be checked. data and err
// are state.json as read.
func checkSummary(ctx context.Context, w interface {
	ReadEvents(context.Context, string) ([]workspace.Event, []error, error)
}, id string, data []byte, err error) *SummaryCheck {
	c := &SummaryCheck{TaskID: id, Summarised: true, Problems: []string{}}
	if err == nil {
		var st workspace.State
		st, err = ValidateState(id, data)
		c.Status, c.JournalSeq = st.Status, st.JournalSeq
	}
	switch {
	case err != nil:
		c.Problems = append(c.Problems, "state.json: "+err.Error())
	case !vocab.Finished(c.Status):
		c.Problems = append(c.Problems, "state.json says the task is "+c.Status+", not finished")
	default:
		c.StateValid = true
	}
	evs, bad, err := w.ReadEvents(ctx, id)
	if err != nil && !errors.Is(err, workspace.ErrNotFound) {
		c.Problems = append(c.Problems, "events.log: "+err.Error())
	}
	for _, b := range bad {
		c.Problems = append(c.Problems, "events.log: "+b.Error())
	}
	for _, ev := range evs {
		for _, name := range finalEvents {
			if ev.Name == name {
				c.FinalEvent, c.FinalAt = ev.Name, ev.Time
			}
		}
	}
	c.EventsAgree = c.FinalEvent != "" && c.FinalEvent == finalEvents[c.Status]
	if !c.EventsAgree {
		want := finalEvents[c.Status]
		if want == "" {
			want = "an event ending the task"
		}
		got := "none"
		if c.FinalEvent != "" {
			got = c.FinalEvent
		}
		c.Problems = append(c.Problems, fmt.Sprintf("events.log: want %s, the last event ending the task is %s", want, got))
	}
	return c
}
