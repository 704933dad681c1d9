package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// committer is the daemon's handle on one task (workspace.Committer): it
// remembers the state its last commit wrote, so that a commit that reads
// the same bytes back from the states row skips decoding them, and checks
// the state it writes against the schema only where it differs
// (statecheck.Next): that document was checked before it was written.
// Anything else in the row (a backup restored, an import) is decoded and
// the next state checked whole.
type committer struct {
	s    *Store
	id   string
	last knownState
}

// Committer is the daemon's handle on task id (workspace.Served).
func (s *Store) Committer(id string) workspace.Committer { return &committer{s: s, id: id} }

var _ workspace.Served = (*Store)(nil)

// knownState is a state document the daemon wrote, and its decoding.
type knownState struct {
	doc  string
	st   workspace.State
	plan knownPlan
}

// knownPlan is a plan document and its decoding.
type knownPlan struct {
	body string
	p    *workspace.Plan
}

// Commit takes up to req.Max waiting markers of the task (in the order
// they were inserted), journals them, folds them and writes the new state,
// backup and events in one transaction, which it commits only while the
// lease's epoch is still req.Lead's (else ErrFenced, and nothing is
// written). A task with no state yet gets its first; a task with nothing
// waiting commits nothing.
func (c *committer) Commit(ctx context.Context, req workspace.CommitRequest) (workspace.Applied, error) {
	max := req.Max
	if max <= 0 {
		max = sqlstore.DefaultChunk
	}
	var epoch int64
	if req.Lead != nil {
		epoch = req.Lead.Epoch()
	}
	var (
		a     workspace.Applied
		wrote knownState
	)
	err := pgx.BeginFunc(ctx, c.s.pool, func(tx pgx.Tx) error {
		var err error
		a, wrote, err = c.s.commit(ctx, tx, c.last, c.id, max, epoch)
		return err
	})
	if err != nil {
		return workspace.Applied{}, err
	}
	if a.Gone {
		return a, nil
	}
	if wrote.doc != "" {
		c.last = wrote
	}
	a.Finished = vocab.Finished(wrote.st.Status)
	a.Progress, _ = c.s.Progress(ctx, c.id, wrote.st, wrote.plan.p)
	return a, nil
}

// commitNothing ends a commit that took no marker: it writes a new task's
// first state, and deletes the markers passed over.
func (s *Store) commitNothing(ctx context.Context, tx pgx.Tx, taskID string, st workspace.State, hasState bool, dups []int64, epoch int64) (workspace.Applied, knownState, error) {
	if len(dups) > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM markers WHERE id = ANY($1)", dups); err != nil {
			return workspace.Applied{}, knownState{}, fmt.Errorf("pass over reused marker names of task %s: %w", taskID, err)
		}
	}
	a := workspace.Applied{Seq: st.JournalSeq}
	if hasState {
		return a, knownState{st: st}, nil
	}
	data, err := marshalState(st)
	if err != nil {
		return workspace.Applied{}, knownState{}, fmt.Errorf("encode state of task %s: %w", taskID, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ($1, $2, $3, $4)",
		taskID, st.JournalSeq, string(data), epoch); err != nil {
		return workspace.Applied{}, knownState{}, fmt.Errorf("write the first state of task %s: %w", taskID, err)
	}
	return a, knownState{doc: string(data), st: st}, nil
}

// marshalState encodes a state as the tree holds it, checked against the
// state schema.
func marshalState(st workspace.State) ([]byte, error) {
	data, err := atomicfile.Marshal(st)
	if err != nil {
		return nil, err
	}
	return data, statecheck.Next(nil, st, data)
}
