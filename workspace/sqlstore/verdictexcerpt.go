package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/workspaced/workspaced/workspace"
)

// The verdict column of a journal row (migrations: SQLite 0009,
// PostgreSQL 0013) holds what the verdict on its marker needs of the
// state the same commit wrote: what workspace.ParseVerdictState keeps of
// that document, written as a document of its own, with the stamp
// (version, epoch) of the state row. While the state row has that stamp
// and journal_seq, the excerpt is what a scan of its document would give,
// and a waiter reads its verdict from its own row: a few hundred bytes,
// not the whole state (504 KiB at 10,000 subtasks). Once a later commit or
// a restore has moved the row on, or where a row has no excerpt (journaled
// before the migration, imported), the verdict reads the document, as the
// verdict is judged against the state now.

// verdictExcerpt is the verdict column's JSON.
type verdictExcerpt struct {
	Version int64           `json:"version"`
	Epoch   int64           `json:"epoch"`
	State   json.RawMessage `json:"state"`
}

// excerptState is the state document of an excerpt: the keys of a state
// that ParseVerdictState reads, spelled as a state spells them.
type excerptState struct {
	TaskID     string                             `json:"task_id"`
	PlanStatus string                             `json:"plan_status,omitempty"`
	Status     string                             `json:"status"`
	Phase      string                             `json:"phase"`
	Subtasks   map[string]*workspace.SubtaskState `json:"subtasks,omitempty"`
	Errors     []workspace.StateError             `json:"errors,omitempty"`
	JournalSeq int64                              `json:"journal_seq"`
}

// VerdictExcerpt is the verdict column of rec's journal row, st being
// the state its commit writes under stamp.
func VerdictExcerpt(st workspace.State, rec workspace.JournalRecord, stamp Stamp) (string, error) {
	x := excerptState{TaskID: st.TaskID, PlanStatus: st.PlanStatus, Status: st.Status, Phase: st.Phase, JournalSeq: st.JournalSeq}
	if ss := st.Subtasks[rec.Marker.SubtaskID]; ss != nil {
		x.Subtasks = map[string]*workspace.SubtaskState{rec.Marker.SubtaskID: ss}
	}
	for _, e := range st.Errors {
		if e.Seq == rec.Seq {
			x.Errors = append(x.Errors, e)
		}
	}
	doc, err := json.Marshal(x)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(verdictExcerpt{Version: stamp.Version, Epoch: stamp.Epoch, State: doc})
	return string(b), err
}

// journalVerdict is what ReadVerdict reads with a journal row: its
// excerpt and the stamp and journal_seq of the task's state row (nil
// where there is none).
type journalVerdict struct {
	excerpt             *string
	version, epoch, seq *int64
}

// state is what the excerpt says of the state for the verdict on rec,
// and ok when it holds for the state row read with it: same stamp, same
// journal_seq.
func (r journalVerdict) state(taskID string, rec workspace.JournalRecord) (workspace.State, bool) {
	if r.excerpt == nil || r.version == nil || r.epoch == nil || r.seq == nil {
		return workspace.State{}, false
	}
	var x verdictExcerpt
	if json.Unmarshal([]byte(*r.excerpt), &x) != nil || x.Version != *r.version || x.Epoch != *r.epoch {
		return workspace.State{}, false
	}
	st, err := workspace.ParseVerdictState(taskID, x.State, rec.Marker.SubtaskID, rec.Seq)
	if err != nil || st.JournalSeq != *r.seq {
		return workspace.State{}, false
	}
	return st, true
}

// hasExcerpts says whether the journal has the verdict column (a
// database migrated past it); once it has, it is not asked again.
func (s *Store) hasExcerpts(ctx context.Context) bool {
	if s.excerpts.Load() {
		return true
	}
	rows, err := s.r.Query(ctx, "SELECT verdict FROM journal WHERE 1 = 0")
	if err != nil {
		return false
	}
	for rows.Next() {
	}
	rows.Close()
	if rows.Err() != nil {
		return false
	}
	s.excerpts.Store(true)
	return true
}
