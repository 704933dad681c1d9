package sqlstore

import (
	"encoding/json"
	"fmt"
	"path"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// CheckVerdictName refuses a name a verdict is asked for that is not a
// marker's.
func CheckVerdictName(name string) error {
	if _, ok := workspace.IsMarkerName(name); !ok || path.Base(name) != name {
		return fmt.Errorf("%q is not the name of a marker", name)
	}
	return nil
}

// DecodeRecord reads the journal record of marker name as its row holds
// it.
func DecodeRecord(name, body string) (workspace.JournalRecord, error) {
	var rec workspace.JournalRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		return rec, fmt.Errorf("journal record of marker %s: %w", name, err)
	}
	return rec, nil
}

// Verdict judges the marker name of a task where a store found it
// (workspace.MarkerWaiting, MarkerDecided or MarkerMissing): when
// decided, by rec, its newest journal record, and st, the task's state.
// A record at or before after is another marker's: the marker reused its
// name and is refused for it (machine.JudgeReused).
func Verdict(st workspace.State, rec workspace.JournalRecord, taskID, name, where string, after int64) (workspace.Verdict, string) {
	switch {
	case where != workspace.MarkerDecided:
		return workspace.Verdict{}, where
	case rec.Seq <= after:
		// The marker's own record would follow after: this one was
		// another marker's, and the name was reused.
		return machine.JudgeReused(st, taskID, name, "", rec.Seq), where
	}
	return machine.Judge(st, rec, name), where
}
