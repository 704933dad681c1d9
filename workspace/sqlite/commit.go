package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Committing on SQLite: one BEGIN IMMEDIATE transaction per chunk takes a
// task's waiting markers in insertion order, journals them with the next
// sequence numbers, folds them with the state machine, writes the state
// (the previous one kept as a backup), appends the events and deletes the
// markers — all or nothing. The transaction is the commit point and the
// recovery: a daemon killed anywhere before COMMIT leaves the markers
// waiting and nothing else. It holds SQLite's write lock from its first
// read, so what it reads (the products a done names, the plan) cannot
// change before it commits.

// committer is the daemon's handle on one task (workspace.Committer), as
// on PostgreSQL: it keeps the state document its last commit wrote with
// its decoding (knownState), so that reading those bytes back costs no
// decoding and statecheck.Next checks only what changed, that document
// having been checked before it was written. A document it did not write
// (a backup restored, an import) is decoded, and the next state checked
// whole.
type committer struct {
	s    *Store
	id   string
	last knownState
	plan *workspace.Plan // the plan progress read last
}

// knownState is a state document the daemon wrote, and its decoding.
type knownState struct {
	doc string
	st  workspace.State
}

// Committer is the daemon's handle on task id (workspace.Served).
func (s *Store) Committer(id string) workspace.Committer { return &committer{s: s, id: id} }

// Commit takes up to req.Max waiting markers of the task (in the order
// they were inserted), journals them, folds them and writes the new state,
// backup and events in one transaction. A task with no state yet gets its
// first; a task with nothing waiting commits nothing.
func (c *committer) Commit(ctx context.Context, req workspace.CommitRequest) (workspace.Applied, error) {
	max := req.Max
	if max <= 0 {
		max = sqlstore.DefaultChunk
	}
	var (
		a     workspace.Applied
		st    workspace.State
		wrote knownState
	)
	err := c.s.writeSynced(ctx, func(tx wtx) error {
		var err error
		a, st, wrote, err = c.s.commit(ctx, tx, c.last, c.id, max)
		return err
	})
	if err != nil {
		c.last = knownState{}
		return workspace.Applied{}, fault(err)
	}
	if a.Gone {
		return a, nil
	}
	if wrote.doc != "" {
		c.last = wrote
	}
	a.Finished = vocab.Finished(st.Status)
	a.Progress, c.plan = c.s.Progress(ctx, c.id, st, c.plan)
	return a, nil
}

// waiting is one marker row.
type waiting struct {
	id    int64
	kind  string
	name  string
	body  string
	taken bool // the journal holds its name already
}

func (m waiting) passed() (int64, bool) { return m.id, m.taken }

// commitTx is what one commit's transaction knows.
type commitTx struct {
	s        *Store
	tx       wtx
	id       string
	hasState bool
	prev     string // the state row's document
	prevSeq  int64
	st       workspace.State // the state, brought up to the journal
	base     int64           // the last seq st reflects
	ms       []waiting
	last     knownState       // what the committer wrote last
	valid    *workspace.State // st, when known valid
}

// commit is one chunk's transaction, last what the committer wrote
// before; it returns what it did, the task's state afterwards and, when
// it wrote one, the state written.
func (s *Store) commit(ctx context.Context, tx wtx, last knownState, taskID string, max int) (workspace.Applied, workspace.State, knownState, error) {
	c := &commitTx{s: s, tx: tx, id: taskID, last: last}
	if err := c.read(ctx, max); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return workspace.Applied{Gone: true}, workspace.State{}, knownState{}, nil // removed meanwhile
		}
		return workspace.Applied{}, workspace.State{}, knownState{}, fmt.Errorf("read task %s to commit: %w", taskID, err)
	}
	full := len(c.ms) == max // more may be waiting
	ms, dups := sqlstore.PassOver(c.ms, waiting.passed)
	if len(ms) == 0 {
		a, wrote, err := c.nothing(ctx, dups)
		a.More = full && err == nil
		return a, c.st, wrote, err
	}
	f, err := c.fold(ctx, ms)
	if err != nil {
		return workspace.Applied{}, workspace.State{}, knownState{}, err
	}
	if err := c.write(ctx, f, dups); err != nil {
		return workspace.Applied{}, workspace.State{}, knownState{}, err
	}
	a := workspace.Applied{Taken: len(f.Recs), Seq: f.Next.JournalSeq, Events: f.Evs, More: full && f.Stopped == nil,
		// When the machine stopped (a plan it cannot load), the markers
		// from that one on stay waiting and the next commit tries them
		// again.
		Stopped: f.Stopped}
	for _, r := range f.Recs {
		if r.Rejected != "" {
			a.Rejected++
		}
	}
	return a, f.Next, knownState{doc: string(f.Data), st: f.Next}, nil
}

// read reads the task (sql.ErrNoRows when gone), its state brought up to
// the journal, and up to max markers waiting, each with whether its name
// is journaled already.
func (c *commitTx) read(ctx context.Context, max int) error {
	var doc string
	if err := c.tx.QueryRowContext(ctx, "SELECT doc FROM tasks WHERE id = $1", c.id).Scan(&doc); err != nil {
		return err
	}
	err := c.tx.QueryRowContext(ctx, "SELECT doc, journal_seq FROM states WHERE task_id = $1", c.id).Scan(&c.prev, &c.prevSeq)
	switch {
	case err == nil:
		c.hasState = true
		if c.prev == c.last.doc {
			c.st = c.last.st
			c.valid = &c.st
		} else if err := json.Unmarshal([]byte(c.prev), &c.st); err != nil {
			return fmt.Errorf("state of task %s does not parse: %w", c.id, err)
		}
	case errors.Is(err, sql.ErrNoRows):
		var t workspace.Task
		if err := json.Unmarshal([]byte(doc), &t); err != nil {
			return fmt.Errorf("task %s does not parse: %w", c.id, err)
		}
		c.st = machine.Init(t)
	default:
		return err
	}
	// A state restored from a backup is behind the journal: the records
	// after it are folded again first, as the file store's recovery does.
	if c.st, c.base, err = sqlstore.CatchUp(ctx, c.tx, c.id, c.st); err != nil {
		return err
	}
	if c.base != c.prevSeq {
		c.valid = nil // folded further: checked whole
	} else if c.valid != nil {
		c.valid = &c.st
	}
	rows, err := c.tx.QueryContext(ctx, `SELECT id, kind, name, body,
		EXISTS (SELECT 1 FROM journal j WHERE j.task_id = m.task_id AND j.name = m.name)
		FROM markers m WHERE task_id = $1 ORDER BY id LIMIT $2`, c.id, max)
	c.ms, err = collect(rows, err, func(r sqlstore.Rows) (waiting, error) {
		var w waiting
		return w, r.Scan(&w.id, &w.kind, &w.name, &w.body, &w.taken)
	})
	return err
}

// nothing ends a commit that took no marker: it writes a new task's
// first state, and deletes the markers passed over.
func (c *commitTx) nothing(ctx context.Context, dups []int64) (workspace.Applied, knownState, error) {
	if err := c.deleteMarkers(ctx, dups); err != nil {
		return workspace.Applied{}, knownState{}, err
	}
	a := workspace.Applied{Seq: c.st.JournalSeq}
	if c.hasState {
		return a, knownState{}, nil
	}
	data, err := atomicfile.Marshal(c.st)
	if err == nil {
		err = statecheck.Next(nil, c.st, data)
	}
	if err != nil {
		return workspace.Applied{}, knownState{}, fmt.Errorf("encode state of task %s: %w", c.id, err)
	}
	if _, err := c.tx.ExecContext(ctx, "INSERT INTO states (task_id, journal_seq, doc, epoch, updated_at) VALUES ($1, $2, $3, 0, $4)",
		c.id, c.st.JournalSeq, string(data), ts(now())); err != nil {
		return workspace.Applied{}, knownState{}, fmt.Errorf("write the first state of task %s: %w", c.id, err)
	}
	return a, knownState{doc: string(data), st: c.st}, nil
}

func (c *commitTx) deleteMarkers(ctx context.Context, ids []int64) error {
	for _, id := range ids {
		if _, err := c.tx.ExecContext(ctx, "DELETE FROM markers WHERE id = $1", id); err != nil {
			return fmt.Errorf("delete marker %d of task %s: %w", id, c.id, err)
		}
	}
	return nil
}

// folded is what fold made of the markers: their records, the new state
// encoded and checked, and its events.
type folded struct {
	sqlstore.Folded
	ms []waiting
}

// fold judges the markers with the machine (records with the next
// sequence numbers, the products read in this transaction), folds the
// records into the state and encodes it, checked against the schema.
func (c *commitTx) fold(ctx context.Context, ms []waiting) (folded, error) {
	f := folded{Folded: sqlstore.Folded{Now: now(), Recs: make([]workspace.JournalRecord, len(ms))}}
	for i, m := range ms {
		f.Recs[i] = c.judge(ctx, m, c.base+int64(i)+1, f.Now)
	}
	f.Next, f.Evs, f.Stopped = machine.Continue(c.st, sqlstore.PlanLoader(ctx, c.tx, c.id, c.st), f.Recs)
	taken, err := f.Settle(c.id, c.valid)
	if err != nil {
		return folded{}, err
	}
	f.ms = ms[:taken]
	return f, nil
}

// judge turns a marker row into its journal record by the machine's
// rules (machine.JudgeMarker), the product it names read in the
// transaction. A row is inserted whole, so nothing waits for a grace
// period: a marker refused now, softly or not, is rejected.
func (c *commitTx) judge(ctx context.Context, m waiting, seq int64, at time.Time) workspace.JournalRecord {
	rec, _ := machine.JudgeMarker(m.kind, m.name, []byte(m.body), c.s.Settings(), func(outputFile string) machine.ProductRead {
		b, ok, err := sqlstore.ReadBody(ctx, c.tx, c.id, outputFile)
		if err != nil {
			return machine.ProductRead{Err: err}
		}
		return machine.ProductRead{Data: []byte(b), Missing: !ok}
	}, seq, at)
	return rec
}

// write writes the journal rows, the previous state kept as a backup
// (pruned to backups.keep), the new state, its events, and deletes the
// markers taken and those passed over.
func (c *commitTx) write(ctx context.Context, f folded, dups []int64) error {
	ids := make([]int64, len(f.Recs))
	for i, r := range f.Recs {
		rb, err := atomicfile.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode journal record %d of task %s: %w", r.Seq, c.id, err)
		}
		if _, err := c.tx.ExecContext(ctx, "INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ($1, $2, $3, $4, $5, 0)",
			c.id, r.Seq, ts(f.Now), f.ms[i].name, string(rb)); err != nil {
			return fmt.Errorf("journal marker %s of task %s: %w", f.ms[i].name, c.id, err)
		}
		ids[i] = f.ms[i].id
	}
	var err error
	if c.hasState {
		if err = keepBackup(ctx, c.tx, c.id, c.prevSeq, c.prev, c.s.Settings().Backups.Keep); err != nil {
			return err
		}
		_, err = c.tx.ExecContext(ctx, "UPDATE states SET journal_seq = $2, doc = $3, updated_at = $4 WHERE task_id = $1",
			c.id, f.Next.JournalSeq, string(f.Data), ts(f.Now))
	} else {
		_, err = c.tx.ExecContext(ctx, "INSERT INTO states (task_id, journal_seq, doc, epoch, updated_at) VALUES ($1, $2, $3, 0, $4)",
			c.id, f.Next.JournalSeq, string(f.Data), ts(f.Now))
	}
	if err != nil {
		return fmt.Errorf("write the state of task %s: %w", c.id, err)
	}
	if err := insertEvents(ctx, c.tx, c.id, f.Evs...); err != nil {
		return err
	}
	return c.deleteMarkers(ctx, append(ids, dups...))
}

// insertEvents appends events of a task in tx, as sqlstore's InsertEvents
// does, with no executor between: the commit's own path.
func insertEvents(ctx context.Context, tx wtx, taskID string, evs ...workspace.Event) error {
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", taskID, ts(e.Time), workspace.FormatEvent(e)); err != nil {
			return fmt.Errorf("append event %s: %w", e.Name, err)
		}
	}
	return nil
}
