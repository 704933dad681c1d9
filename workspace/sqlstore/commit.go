package sqlstore

import (
	"fmt"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// DefaultChunk is the most markers of one task one commit takes when the
// daemon asks for no limit.
const DefaultChunk = 128

// Folded is what a commit's fold made of the markers it took: their
// records, the state they fold into (encoded and checked: Data), its
// events, and the time it judged them at.
type Folded struct {
	Recs    []workspace.JournalRecord
	Next    workspace.State
	Data    []byte
	Evs     []workspace.Event
	Stopped error // what the machine stopped at, if it did
	Now     time.Time
}

// Settle is the end of a commit's fold, the same on every database: of
// the records the machine folded into Next, it keeps those taken (none is
// the error Stopped) and says how many, and encodes Next into Data,
// checked against the schema where it differs from valid, the state it
// derives from when that is known valid (statecheck.Next).
func (f *Folded) Settle(taskID string, valid *workspace.State) (int, error) {
	taken := 0
	for taken < len(f.Recs) && f.Recs[taken].Seq <= f.Next.JournalSeq {
		taken++
	}
	if taken == 0 {
		return 0, fmt.Errorf("apply markers of task %s: %w", taskID, f.Stopped)
	}
	data, err := atomicfile.Marshal(f.Next)
	if err != nil {
		return 0, fmt.Errorf("encode state of task %s: %w", taskID, err)
	}
	if err := statecheck.Next(valid, f.Next, data); err != nil {
		return 0, fmt.Errorf("state of task %s would not validate, not written: %w", taskID, err)
	}
	f.Recs, f.Data = f.Recs[:taken], data
	return taken, nil
}
