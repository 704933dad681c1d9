package machine

import "github.com/workspaced/workspaced/workspace"

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
