package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// DefaultChunk is the most markers of one task one commit takes when the
// daemon asks for no limit.
const DefaultChunk = 128

// PassOver splits out of ms the markers whose name the journal holds
// already (inserted while the first of that name was being taken; taken
// says so, with the marker's id): they are deleted without a record, so
// that each name is journaled once.
func PassOver[M any](ms []M, taken func(M) (int64, bool)) (keep []M, dups []int64) {
	keep = ms[:0]
	for _, m := range ms {
		if id, ok := taken(m); ok {
			dups = append(dups, id)
		} else {
			keep = append(keep, m)
		}
	}
	return keep, dups
}

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

// Progress lists the subtasks in progress of st, task taskID's state,
// with the complexity their plan estimates, for the timeout detector:
// plan when it is st's plan, else the plan read (none: no complexity
// known), which it returns for the next call.
func (s *Store) Progress(ctx context.Context, taskID string, st workspace.State, plan *workspace.Plan) ([]workspace.InProgress, *workspace.Plan) {
	var items []workspace.InProgress
	for sid, sub := range st.Subtasks {
		if sub.Status != machine.SubtaskInProgress || sub.StartedAt == nil {
			continue
		}
		if plan == nil || plan.ID != st.PlanID || plan.Version != st.PlanVersion {
			plan, _ = s.ReadPlan(ctx, taskID, st.PlanVersion)
		}
		it := workspace.InProgress{TaskID: taskID, SubtaskID: sid, StartedAt: *sub.StartedAt}
		if p := plan; p != nil && p.ID == st.PlanID && p.Version == st.PlanVersion {
			for _, ps := range p.Subtasks {
				if ps.ID == sid {
					it.Complexity = ps.EstimatedComplexity
				}
			}
		}
		items = append(items, it)
	}
	return items, plan
}
