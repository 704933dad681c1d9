package machine

import (
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Judge is the verdict on rec, the journal record of the marker name,
// from st, a state that reflects it (st.JournalSeq >= rec.Seq): what an
// agent that dropped the marker reads back, from any store.
func Judge(st workspace.State, rec workspace.JournalRecord, name string) workspace.Verdict {
	v := workspace.Verdict{Marker: name, TaskID: st.TaskID, Kind: rec.Kind, Seq: rec.Seq, SubtaskID: rec.Marker.SubtaskID, TaskStatus: st.Status}
	if ss := st.Subtasks[v.SubtaskID]; ss != nil {
		v.SubtaskStatus, v.Worker = ss.Status, ss.Worker
	}
	reason, refused := Refusal(st, rec)
	switch {
	case refused && v.SubtaskID != "" && st.PlanStatus == PlanApproved && st.Subtasks[v.SubtaskID] == nil:
		v.Verdict = workspace.VerdictNotFound
	case refused && rec.Kind == workspace.KindClaim:
		v.Verdict = workspace.VerdictLost
	case refused:
		v.Verdict = workspace.VerdictRefused
	case rec.Kind == workspace.KindClaim:
		v.Verdict = workspace.VerdictWon
	default:
		v.Verdict = workspace.VerdictApplied
	}
	v.Reason = reason
	return v
}

// JudgeReused is the verdict on the marker name of task taskID, refused
// unread because its name was journaled already, as the record of seq
// journaled: refused, for a claim as for a done marker, with no seq of
// its own. st is the task's state when it was read (zero when it has
// none), subtaskID the subtask the marker named, when known. Every store
// gives this verdict for a reused name.
func JudgeReused(st workspace.State, taskID, name, subtaskID string, journaled int64) workspace.Verdict {
	kind, _ := workspace.IsMarkerName(name)
	v := workspace.Verdict{Marker: name, TaskID: taskID, Kind: kind, Verdict: workspace.VerdictRefused,
		Journaled: journaled, Reason: ReasonReused(journaled), SubtaskID: subtaskID, TaskStatus: st.Status}
	if ss := st.Subtasks[subtaskID]; ss != nil {
		v.SubtaskStatus, v.Worker = ss.Status, ss.Worker
	}
	return v
}

// ReasonReused is the reason of a marker refused because the record of
// seq journaled already holds its name.
func ReasonReused(journaled int64) string {
	return fmt.Sprintf("this marker name was already used (journaled as seq %d); write a new marker with a fresh name", journaled)
}
