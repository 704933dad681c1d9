package workspace

import (
	"errors"
	"fmt"
	"path"

	"github.com/workspaced/workspaced/vocab"
)

// StateHead is what a listing of many tasks needs of a state.json: its
// task id, status, phase and journal_seq.
type StateHead struct {
	TaskID     string
	Status     string
	Phase      string
	JournalSeq int64
}

// stateHeadJSON holds the fields StateHead reads, as pointers so that a
// missing one can be told from a zero one.
type stateHeadJSON struct {
	TaskID     *string `json:"task_id"`
	Status     *string `json:"status"`
	Phase      string  `json:"phase"`
	JournalSeq *int64  `json:"journal_seq"`
}

// ParseStateHead reads data, task id's state.json, for its head only. It
// fails (ErrInvalid) on data that is not one whole JSON object, on a head
// field that does not decode, on a task_id that is missing or names
// another task, on a status that is missing or not a task status, and on
// a journal_seq that is missing or negative. What lies beyond the head is
// skipped by its brackets and strings, as ParseVerdictState skips it (a
// scan, not a decoding: about 0.5 ms for a task of 10,000 subtasks where
// decoding took 15), and not checked against the schema: checking every
// state is what made listing 20,000 tasks take seconds, and `workspaced
// validate` (ReadState) is the full check.
func ParseStateHead(id string, data []byte) (StateHead, error) {
	name := path.Join(TaskDir(id), "state.json")
	v, err := scanState(data, nil)
	if err != nil {
		return StateHead{}, &Error{Kind: ErrInvalid, Op: "parse " + name, Err: err, Hint: StateHint}
	}
	h := v.head
	if err := h.check(id); err != nil {
		return StateHead{}, &Error{Kind: ErrInvalid, Op: "read " + name, Err: err, Hint: StateHint}
	}
	return StateHead{TaskID: *h.TaskID, Status: *h.Status, Phase: h.Phase, JournalSeq: *h.JournalSeq}, nil
}

// CheckStateHead checks st, decoded from task id's state, the way
// ParseStateHead checks a head: an error saying so when its task_id names
// another task or is missing, or its status is not a task status. It
// also refuses a subtask, checkpoint or worker that is null, which no
// daemon writes and every reader of the state would trip on.
func CheckStateHead(id string, st State) error {
	h := stateHeadJSON{JournalSeq: &st.JournalSeq}
	// Decoded, a missing task_id or status reads as empty.
	if st.TaskID != "" {
		h.TaskID = &st.TaskID
	}
	if st.Status != "" {
		h.Status = &st.Status
	}
	if err := h.check(id); err != nil {
		return err
	}
	if k, ok := nullEntry(st.Subtasks); ok {
		return fmt.Errorf("subtask %q is null", k)
	}
	if k, ok := nullEntry(st.Checkpoints); ok {
		return fmt.Errorf("checkpoint %q is null", k)
	}
	if k, ok := nullEntry(st.Workers); ok {
		return fmt.Errorf("worker %q is null", k)
	}
	return nil
}

// nullEntry is the least key of m whose value is nil, and whether one is.
func nullEntry[T any](m map[string]*T) (least string, found bool) {
	for k, v := range m {
		if v == nil && (!found || k < least) {
			least, found = k, true
		}
	}
	return least, found
}

// StateHint is the hint of a state.json that does not validate.
const StateHint = "restore the newest valid backup of the state, or let the daemon restore it when it next loads the task"

func (h *stateHeadJSON) check(id string) error {
	switch {
	case h.TaskID == nil:
		return errors.New("task_id is missing")
	case *h.TaskID != id:
		return fmt.Errorf("state of task %q, not %q", *h.TaskID, id)
	case h.Status == nil:
		return errors.New("status is missing")
	case !vocab.Active(*h.Status) && !vocab.Finished(*h.Status):
		return fmt.Errorf("status %q is not a task status", *h.Status)
	case h.JournalSeq == nil:
		return errors.New("journal_seq is missing")
	case *h.JournalSeq < 0:
		return fmt.Errorf("journal_seq %d is negative", *h.JournalSeq)
	}
	return nil
}
