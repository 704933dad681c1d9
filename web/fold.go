package web

import (
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// The panel's views of time: a task's state as of any journal record
// (the replay), and each attempt at a subtask as a span of time (the
// Gantt chart). Both are the state machine's own fold of the journal,
// so they say what the daemon decided, not what the markers asked for.

// planLoader reads plan versions for a fold; a fold from the start finds
// every plan in the records that proposed it, so it is called only when
// the journal starts later than that.
type planLoader func(version int) (*workspace.Plan, error)

// StateAt folds the records of recs up to seq (all when seq < 0) over
// the initial state of task: the state as it was once the daemon had
// applied record seq.
func StateAt(task workspace.Task, plans planLoader, recs []workspace.JournalRecord, seq int64) (workspace.State, error) {
	upTo := len(recs)
	if seq >= 0 {
		upTo = 0
		for upTo < len(recs) && recs[upTo].Seq <= seq {
			upTo++
		}
	}
	st, _, err := machine.Replay(task, plans, recs[:upTo])
	return st, err
}

// Span is one attempt at a subtask: from the record that assigned it to
// a worker to the one that completed or failed it. End is nil while it
// runs.
type Span struct {
	Subtask string     `json:"subtask"`
	Worker  string     `json:"worker"`
	Attempt int        `json:"attempt"`
	Start   time.Time  `json:"start"`
	End     *time.Time `json:"end,omitempty"`
	// Outcome is completed, failed (retry says whether it went back to
	// pending) or running.
	Outcome string `json:"outcome"`
	Retry   bool   `json:"retry,omitempty"`
}

// Outcomes of a Span.
const (
	SpanRunning   = "running"
	SpanCompleted = "completed"
	SpanFailed    = "failed"
)

// Spans folds recs over the initial state of task and turns the
// machine's work_assigned, work_completed and work_failed events into
// spans, timed by the records' taken_at (the time of every event the
// machine emits), in the order they began. A record the machine refused
// makes no span.
func Spans(task workspace.Task, plans planLoader, recs []workspace.JournalRecord) ([]Span, error) {
	_, evs, err := machine.Replay(task, plans, recs)
	spans := []Span{}
	open := map[string]int{} // subtask → its running span's index
	attempts := map[string]int{}
	for _, e := range evs {
		if len(e.Args) < 2 {
			continue
		}
		sub, worker, at := e.Args[0], e.Args[1], e.Time.UTC()
		switch e.Name {
		case machine.EventWorkAssigned:
			attempts[sub]++
			open[sub] = len(spans)
			spans = append(spans, Span{Subtask: sub, Worker: worker, Attempt: attempts[sub], Start: at, Outcome: SpanRunning})
		case machine.EventWorkCompleted, machine.EventWorkFailed:
			i, ok := open[sub]
			if !ok {
				continue
			}
			delete(open, sub)
			spans[i].End, spans[i].Outcome = &at, SpanCompleted
			if e.Name == machine.EventWorkFailed {
				spans[i].Outcome, spans[i].Retry = SpanFailed, e.Attrs["retry"] == "true"
			}
		}
	}
	return spans, err
}
