package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Folding journal records into a state, as the daemon's commit does, as
// a restore's catch-up does and as a rebuild does.

// PlanLoader gives the state machine the plan the state tracks when no
// record carries it: plan.json or the kept version when it is that plan,
// else the newest journal record that carries it.
func PlanLoader(ctx context.Context, tx Executor, taskID string, st workspace.State) func(int) (*workspace.Plan, error) {
	return func(version int) (*workspace.Plan, error) {
		for _, path := range []string{"plan.json", fmt.Sprintf("plans/plan_v%d.json", version)} {
			b, ok, err := ReadBody(ctx, tx, taskID, path)
			if err != nil || !ok {
				continue
			}
			var p workspace.Plan
			if json.Unmarshal([]byte(b), &p) == nil && p.ID == st.PlanID && p.Version == version {
				return &p, nil
			}
		}
		recs, err := Strings(tx.Query(ctx, `SELECT record FROM journal WHERE task_id = $1 AND record LIKE '%"plan"%' ORDER BY seq DESC`, taskID))
		if err != nil {
			return nil, err
		}
		for _, b := range recs {
			var r workspace.JournalRecord
			if json.Unmarshal([]byte(b), &r) == nil && r.Plan != nil && r.Plan.ID == st.PlanID && r.Plan.Version == version {
				return r.Plan, nil
			}
		}
		return nil, fmt.Errorf("plan %s v%d of task %s: not among the products nor in the journal", st.PlanID, version, taskID)
	}
}

// CatchUp folds the journal records after st's journal_seq into st (a
// state restored from a backup) and returns it with the last seq taken.
func CatchUp(ctx context.Context, tx Executor, taskID string, st workspace.State) (workspace.State, int64, error) {
	after, err := Strings(tx.Query(ctx, "SELECT record FROM journal WHERE task_id = $1 AND seq > $2 ORDER BY seq", taskID, st.JournalSeq))
	if err != nil {
		return st, 0, fmt.Errorf("read the journal of task %s: %w", taskID, err)
	}
	return Fold(ctx, tx, taskID, st, after)
}

// Fold folds the journal records after (their JSON, in seq order) into
// st and returns it with the last seq taken.
func Fold(ctx context.Context, tx Executor, taskID string, st workspace.State, after []string) (workspace.State, int64, error) {
	if len(after) == 0 {
		return st, st.JournalSeq, nil
	}
	recs := make([]workspace.JournalRecord, len(after))
	for i, b := range after {
		if err := json.Unmarshal([]byte(b), &recs[i]); err != nil {
			return st, 0, fmt.Errorf("journal of task %s after seq %d: %w", taskID, st.JournalSeq, err)
		}
	}
	next, _, stopped := machine.Continue(st, PlanLoader(ctx, tx, taskID, st), recs)
	if stopped != nil {
		return st, 0, fmt.Errorf("fold the journal of task %s after seq %d: %w", taskID, st.JournalSeq, stopped)
	}
	return next, recs[len(recs)-1].Seq, nil
}

// Rebuild derives a task's state from its task row and its journal alone
// (workspace.Rebuilder), folding the records with the state machine and
// the plan loader the commit uses, without reading the states or backups
// tables and without writing anything. It reads one snapshot, so a
// commit running meanwhile is seen whole or not at all. For a journal the
// daemon wrote, the result equals the state it wrote after the last
// record.
func (s *Store) Rebuild(taskID string) (workspace.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	var st workspace.State
	err := s.d.Read(ctx, func(tx Executor) error {
		var doc string
		err := tx.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1", taskID).Scan(&doc)
		if errors.Is(err, ErrNoRows) {
			return NotFoundTask(taskID)
		}
		if err != nil {
			return fmt.Errorf("read task %s: %w", taskID, err)
		}
		task, err := DecodeTask(taskID, doc)
		if err != nil {
			return err
		}
		recs, err := readJournal(ctx, tx, taskID)
		if err != nil {
			return err
		}
		st, err = Rebuild(task, recs, func(st workspace.State) func(int) (*workspace.Plan, error) {
			return PlanLoader(ctx, tx, taskID, st)
		})
		return err
	})
	if err != nil {
		return workspace.State{}, err
	}
	return st, nil
}

// readJournal reads a task's journal records in sequence order; a record
// that does not parse is an error naming its seq.
func readJournal(ctx context.Context, tx Executor, taskID string) ([]workspace.JournalRecord, error) {
	rows, err := tx.Query(ctx, "SELECT seq, record FROM journal WHERE task_id = $1 ORDER BY seq", taskID)
	recs, err := Collect(rows, err, func(r Rows) (workspace.JournalRecord, error) {
		var (
			seq  int64
			body string
			rec  workspace.JournalRecord
		)
		if err := r.Scan(&seq, &body); err != nil {
			return rec, err
		}
		return DecodeJournalRecord(taskID, seq, body)
	})
	if err != nil {
		return nil, ReadErr("read the journal of task "+taskID, err)
	}
	return recs, nil
}
