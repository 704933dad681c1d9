package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// The daemon's verdict on a marker a tool dropped. Everything this
// package takes from where the verdicts are read is in this file, under
// the import name workspace.

// DefaultVerdictWait is how long a tool that drops a marker waits for the
// daemon's verdict when Options.VerdictWait is zero. A serving daemon
// decides within milliseconds; the bound keeps a call well inside a
// client's request timeout.
const DefaultVerdictWait = 20 * time.Second

// Verdicts, as the tools report them: the daemon's, and two of their own.
const (
	verdictWon       = workspace.VerdictWon
	verdictLost      = workspace.VerdictLost
	verdictApplied   = workspace.VerdictApplied
	verdictRefused   = workspace.VerdictRefused
	verdictNotFound  = workspace.VerdictNotFound
	verdictQueued    = "queued"    // no daemon serves: it decides once one does
	verdictUndecided = "undecided" // a daemon serves, but did not decide in time
)

// storeVerdicts is where the verdicts of w's markers are read: the store
// itself when it reads them (the file tree does); nil when it does not.
func storeVerdicts(w workspace.Store) workspace.VerdictSource {
	src, err := service.Verdicts("", w)
	if err != nil {
		return nil
	}
	return src
}

// markerReply is the structured answer of a tool that dropped a marker:
// the verdict on it, and the state it was read from.
type markerReply struct {
	Marker  string `json:"marker"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Journaled is, for a marker refused because its name was used
	// already, the seq of the journal record that holds the name.
	Journaled     int64  `json:"journaled,omitempty"`
	SubtaskID     string `json:"subtask_id,omitempty"`
	SubtaskStatus string `json:"subtask_status,omitempty"`
	Worker        string `json:"worker,omitempty"`
	TaskStatus    string `json:"task_status,omitempty"`
}

// beforeMarker is what a tool checks before it drops a marker: a
// finished task takes none (the daemon no longer reads it).
func (s *Server) beforeMarker(ctx context.Context, op string) error {
	st, err := s.w.ReadState(ctx, s.task)
	if err == nil && vocab.Finished(st.Status) {
		return &toolError{err: &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: fmt.Sprintf("task %s is %s: the workspace daemon takes nothing more for it", s.task, st.Status)},
			hint: "there is nothing more to do in it; " + ToolGetTaskState + " shows how it ended"}
	}
	// A task the daemon has not seen yet, or a corrupt state.json (the
	// daemon repairs it), still takes the marker.
	return nil
}

// deliverOptions are how a tool that writes a product waits for the
// verdict on its done marker: as long as the server waits, reading the
// verdicts where the server reads them.
func (s *Server) deliverOptions() service.DeliverOptions {
	return service.DeliverOptions{Wait: s.wait, Verdicts: s.verdicts}
}

// markerOf is the reply on marker once o came of it.
func markerOf(marker string, o service.Outcome) markerReply {
	r := markerReply{Marker: marker, Verdict: verdictQueued}
	switch o.Stands {
	case service.Undecided:
		r.Verdict = verdictUndecided
	case service.Decided:
		v := o.Verdict
		r.Verdict, r.Reason, r.Journaled, r.SubtaskID = v.Verdict, v.Reason, v.Journaled, v.SubtaskID
		r.SubtaskStatus, r.Worker, r.TaskStatus = v.SubtaskStatus, v.Worker, v.TaskStatus
	}
	return r
}

// verdictReply ends b, the answer of a tool that dropped a marker, with
// what came of it, and returns it with the marker's reply as its
// structured answer. then says, as a clause, what the state shows once
// the marker is applied. A refusal is an error naming what was refused
// (what) and the daemon's reason, with hint.
func (s *Server) verdictReply(b *strings.Builder, r markerReply, what, then, hint string) (reply, error) {
	switch r.Verdict {
	case verdictQueued:
		fmt.Fprintf(b, "No workspace daemon serves this workspace, so the marker waits until one starts (tell whoever runs you); then %s", then)
	case verdictUndecided:
		fmt.Fprintf(b, "The workspace daemon has not decided on it within %s; once it has, %s", s.wait, then)
	case verdictWon, verdictApplied:
		fmt.Fprintf(b, "The workspace daemon accepted it: %s", then)
	default:
		return reply{data: r}, refused(r, what, hint)
	}
	return reply{text: b.String(), data: r}, nil
}

// refused is the error of a marker the daemon refused. One refused for
// its reused name is a retry's business: a call drops a new marker.
func refused(r markerReply, what, hint string) error {
	if r.Journaled != 0 {
		hint = "call the tool again: each call drops its marker under a fresh name"
	}
	kind := workspace.ErrConflict
	if r.Verdict == verdictNotFound {
		kind = workspace.ErrNotFound
	}
	msg := "the workspace daemon refused " + what
	if r.Reason != "" {
		msg += ": " + r.Reason
	}
	return &toolError{err: &workspace.Error{Kind: kind, Msg: msg + " (marker " + r.Marker + ")"}, hint: hint}
}
