package machine

import (
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Marks is what the daemon's metrics see of recs, records in seq order
// folded into st: the kind, the verdict (as Judge gives it) and the drop
// time (dropped(i) of recs[i]) of each record st reflects; a record past
// st.JournalSeq is left out. It costs one pass over the errors the records
// left, not one per record: the machine appends errors in seq order, so
// the ones at or past the first record's seq are at the end.
func Marks(st workspace.State, recs []workspace.JournalRecord, dropped func(i int) time.Time) []workspace.Mark {
	if len(recs) == 0 {
		return nil
	}
	tail := len(st.Errors)
	for tail > 0 {
		if s := st.Errors[tail-1].Seq; s > 0 && s < recs[0].Seq {
			break
		}
		tail--
	}
	view := st
	view.Errors = st.Errors[tail:]
	marks := make([]workspace.Mark, 0, len(recs))
	for i, rec := range recs {
		if rec.Seq > st.JournalSeq {
			break
		}
		marks = append(marks, workspace.Mark{Kind: rec.Kind, Verdict: Judge(view, rec, "").Verdict, Dropped: dropped(i)})
	}
	return marks
}
