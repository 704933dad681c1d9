package files

import (
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Marks: what one Commit tells the daemon's metrics of the markers it
// applied (workspace.Applied.Marks). The records taken since the state
// was last written wait beside their markers' drop times (the files'
// modification times) until a state that reflects them is written.

// folding is the records taken and not yet in a state written, with when
// their markers were dropped.
type folding struct {
	recs    []workspace.JournalRecord
	dropped []time.Time
}

// noteTaken remembers rec, taken from a marker dropped at dropped.
func (t *committer) noteTaken(rec workspace.JournalRecord, dropped time.Time) {
	t.folding.recs = append(t.folding.recs, rec)
	t.folding.dropped = append(t.folding.dropped, dropped)
}

// noteWritten turns the records that st, the state just written,
// reflects into marks; the others are forgotten (a state that stopped
// short is read again from disk by the next commit).
func (t *committer) noteWritten(st workspace.State) {
	f := t.folding
	t.marks = append(t.marks, machine.Marks(st, f.recs, func(i int) time.Time { return f.dropped[i] })...)
	t.folding = folding{recs: f.recs[:0], dropped: f.dropped[:0]}
}
