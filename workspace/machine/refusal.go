package machine

import "github.com/workspaced/workspaced/workspace"

// Whether a record was applied or refused can be read back from the state
// it left, which is what an agent waiting for the verdict on its marker
// does (in any language, from state.json and the journal alone): the
// machine records every refusal as exactly one entry of the state's errors
// carrying the record's seq, and the only other entry a record it applied
// leaves there is the failure of a subtask a done marker reported failed,
// worded by failureMessage.

// failureMessage is the error a done marker reporting subtask failed with
// msg adds to the state's errors when the machine applies it.
func failureMessage(subtask, msg string) string {
	if msg == "" {
		msg = "failed without an error message"
	}
	return "subtask " + subtask + " failed: " + msg
}

// Refusal reports whether the record rec was refused, and why, from st, a
// state that reflects it (st.JournalSeq at or past rec.Seq): a record the
// daemon rejected on reading (rec.Rejected), or one the machine refused
// (an entry of st.Errors with rec's seq other than the failure a failed
// done marker reports). It is pure and reads nothing but its arguments.
func Refusal(st workspace.State, rec workspace.JournalRecord) (reason string, refused bool) {
	if rec.Rejected != "" {
		return rec.Rejected, true
	}
	m := rec.Marker
	for _, e := range st.Errors {
		if e.Seq != rec.Seq {
			continue
		}
		if rec.Kind == workspace.KindDone && m.Status == DoneFailed && e.Message == failureMessage(m.SubtaskID, m.Error) {
			continue
		}
		return e.Message, true
	}
	return "", false
}
