package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Committing on PostgreSQL: one transaction per chunk takes a task's
// waiting markers, journals them with the next sequence numbers, folds
// them with the state machine, writes the state (the previous one kept as
// a backup), appends the events and deletes the markers — all or nothing.
// The transaction is the commit point and the recovery: a daemon killed
// anywhere before COMMIT leaves the markers waiting and nothing else.

// waiting is one marker row.
type waiting struct {
	id        int64
	kind      string
	name      string
	body      string
	droppedAt time.Time
	taken     bool // the journal holds its name already
}

func (m waiting) passed() (int64, bool) { return m.id, m.taken }

// commit is one chunk's transaction; last is what the daemon knows of
// the task's state (zero: nothing), wrote what it wrote. It goes phase by
// phase: read (one round trip), fence, load the state, judge and fold the
// markers, write (one round trip).
func (s *Store) commit(ctx context.Context, tx pgx.Tx, last knownState, taskID string, max int, epoch int64) (workspace.Applied, knownState, error) {
	c := &commitTx{s: s, tx: tx, id: taskID, max: max, epoch: epoch, last: last}
	if err := c.read(ctx); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return workspace.Applied{Gone: true}, knownState{}, nil // removed meanwhile
		}
		return workspace.Applied{}, knownState{}, fmt.Errorf("read task %s to commit: %w", taskID, err)
	}
	if c.cur != epoch {
		return workspace.Applied{}, knownState{}, ErrFenced
	}
	if err := c.load(ctx); err != nil {
		return workspace.Applied{}, knownState{}, err
	}
	full := len(c.ms) == max // more may be waiting
	ms, dups := sqlstore.PassOver(c.ms, waiting.passed)
	if len(ms) == 0 {
		a, k, err := s.commitNothing(ctx, tx, taskID, c.st, c.hasState, dups, epoch)
		a.More = full && err == nil
		return a, k, err
	}
	f, err := c.fold(ctx, ms)
	if err != nil {
		return workspace.Applied{}, knownState{}, err
	}
	if err := c.write(ctx, f, dups); err != nil {
		return workspace.Applied{}, knownState{}, err
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
	a.Marks = machine.Marks(f.Next, f.Recs, func(i int) time.Time { return f.ms[i].droppedAt })
	if f.plan.p == nil {
		f.plan = last.plan
	}
	return a, knownState{doc: string(f.Data), st: f.Next, plan: f.plan}, nil
}

// commitTx is what one commit's transaction knows, phase by phase.
type commitTx struct {
	s     *Store
	tx    pgx.Tx
	id    string
	max   int
	epoch int64
	last  knownState

	// read
	cur      int64 // the lease's epoch
	prev     string
	prevSeq  int64
	hasState bool
	after    []string // journal records past the state row's journal_seq
	ms       []waiting

	// load
	st    workspace.State
	valid *workspace.State // the state the next derives from, when known valid
	base  int64            // the last seq st reflects
}

// read sends the reads to the server in one round trip, in this order.
// Fencing: the lease row is read with a share lock, so a takeover (which
// updates it) waits for this transaction, and this one sees a takeover
// committed before it. The task's row FOR SHARE: a product writer
// (lockTask) holds it FOR NO KEY UPDATE while it decides whether a
// product is final. Then the state for update, the journal records after
// it and the markers waiting, each with whether its name is journaled
// already. A task gone is pgx.ErrNoRows.
func (c *commitTx) read(ctx context.Context) error {
	var one int
	b := &pgx.Batch{}
	b.Queue("SELECT epoch FROM lease WHERE id = 1 FOR SHARE").QueryRow(func(r pgx.Row) error { return r.Scan(&c.cur) })
	b.Queue("SELECT 1 FROM tasks WHERE id = $1 FOR SHARE", c.id).QueryRow(func(r pgx.Row) error { return r.Scan(&one) })
	b.Queue("SELECT doc, journal_seq FROM states WHERE task_id = $1 FOR UPDATE", c.id).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			c.hasState = true
			if err := rows.Scan(&c.prev, &c.prevSeq); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(`SELECT record FROM journal WHERE task_id = $1
		AND seq > coalesce((SELECT journal_seq FROM states WHERE task_id = $1), 0) ORDER BY seq`, c.id).Query(func(rows pgx.Rows) error {
		var err error
		c.after, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue(`SELECT id, kind, name, body, dropped_at,
		EXISTS (SELECT 1 FROM journal j WHERE j.task_id = m.task_id AND j.name = m.name)
		FROM markers m WHERE task_id = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, c.id, c.max).Query(func(rows pgx.Rows) error {
		var err error
		c.ms, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (waiting, error) {
			var w waiting
			err := r.Scan(&w.id, &w.kind, &w.name, &w.body, &w.droppedAt, &w.taken)
			return w, err
		})
		return err
	})
	return c.tx.SendBatch(ctx, b).Close()
}

// load decodes the task's state (or starts it) and brings it up to the
// journal: a state restored from a backup is behind the journal, and the
// records after it are folded again first, as the file store's recovery
// does.
func (c *commitTx) load(ctx context.Context) error {
	st, err := c.s.decodeLocked(ctx, c.tx, c.id, c.hasState, c.prev, c.last)
	if err != nil {
		return err
	}
	if c.hasState && c.prev == c.last.doc {
		c.valid = &st
	}
	if !c.hasState || st.JournalSeq == c.prevSeq {
		c.st, c.base, err = sqlstore.Fold(ctx, txOf(c.tx), c.id, st, c.after)
	} else {
		// The row's journal_seq says otherwise than its document: the
		// document's is the one folded from.
		c.st, c.base, err = sqlstore.CatchUp(ctx, txOf(c.tx), c.id, st)
	}
	if c.base != c.prevSeq {
		c.valid = nil
	}
	if c.valid != nil {
		c.valid = &c.st
	}
	return err
}

// folded is what fold made of the markers: their records, the new state
// encoded and checked, its events and the plan it tracks.
type folded struct {
	sqlstore.Folded
	ms   []waiting
	plan knownPlan
}

// fold judges the markers with the machine (records with the next
// sequence numbers), folds the records into the state and encodes it,
// checked against the schema where it changed.
func (c *commitTx) fold(ctx context.Context, ms []waiting) (folded, error) {
	pr, err := c.s.productsFor(ctx, c.tx, c.id, ms, c.st)
	if err != nil {
		return folded{}, err
	}
	f := folded{Folded: sqlstore.Folded{Now: time.Now().UTC().Truncate(time.Millisecond), Recs: make([]workspace.JournalRecord, len(ms))}}
	for i, m := range ms {
		f.Recs[i] = c.s.judge(m, pr.products, c.base+int64(i)+1, f.Now)
	}
	f.Next, f.Evs, f.Stopped = machine.Continue(c.st, c.planOf(ctx, pr, &f.plan), f.Recs)
	taken, err := f.Settle(c.id, c.valid)
	if err != nil {
		return folded{}, err
	}
	f.ms = ms[:taken]
	return f, nil
}

// planOf gives the machine the plan the state tracks, read with the
// products (as the loader would: plan.json, then its version's file),
// decoded once for as long as its bytes stay the same; it notes the plan
// it gave in plan.
func (c *commitTx) planOf(ctx context.Context, pr read, plan *knownPlan) func(int) (*workspace.Plan, error) {
	plans := sqlstore.PlanLoader(ctx, txOf(c.tx), c.id, c.st)
	st, last := c.st, c.last
	return func(version int) (*workspace.Plan, error) {
		for _, path := range []string{"plan.json", planPath(version)} {
			body, ok := pr.plans[path]
			switch {
			case !ok:
				return plans(version) // not read: another version
			case body == "":
				continue
			case body == last.plan.body && last.plan.p.ID == st.PlanID && last.plan.p.Version == version:
				*plan = last.plan
				return plan.p, nil
			}
			var p workspace.Plan
			if json.Unmarshal([]byte(body), &p) == nil && p.ID == st.PlanID && p.Version == version {
				*plan = knownPlan{body: body, p: &p}
				return &p, nil
			}
		}
		return plans(version)
	}
}

// write sends the commit's writes in one round trip: the journal rows,
// the previous state kept as a backup (pruned to backups.keep), the new
// state, its events, and the markers taken (and those passed over)
// deleted.
func (c *commitTx) write(ctx context.Context, f folded, dups []int64) error {
	n := len(f.Recs)
	seqs, names, bodies, ids := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, r := range f.Recs {
		rb, err := atomicfile.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode journal record %d of task %s: %w", r.Seq, c.id, err)
		}
		seqs[i], names[i], bodies[i], ids[i] = r.Seq, f.ms[i].name, string(rb), f.ms[i].id
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO journal (task_id, seq, taken_at, name, record, epoch)
		SELECT $1, s, $2, n, r, $3 FROM unnest($4::bigint[], $5::text[], $6::text[]) AS u(s, n, r)`,
		c.id, f.Now, c.epoch, seqs, names, bodies)
	if c.prev != "" {
		// The previous state is copied by the server: it is the row
		// about to be updated.
		b.Queue("INSERT INTO backups (task_id, journal_seq, doc) SELECT task_id, journal_seq, doc FROM states WHERE task_id = $1", c.id)
		b.Queue(`DELETE FROM backups WHERE task_id = $1 AND n <= (
			SELECT n FROM backups WHERE task_id = $1 ORDER BY n DESC OFFSET $2 LIMIT 1)`, c.id, c.s.Settings().Backups.Keep)
		b.Queue("UPDATE states SET journal_seq = $2, doc = $3, epoch = $4, updated_at = now() WHERE task_id = $1",
			c.id, f.Next.JournalSeq, string(f.Data), c.epoch)
	} else {
		b.Queue("INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ($1, $2, $3, $4)",
			c.id, f.Next.JournalSeq, string(f.Data), c.epoch)
	}
	if len(f.Evs) > 0 {
		times, lines := make([]time.Time, len(f.Evs)), make([]string, len(f.Evs))
		for i, e := range f.Evs {
			times[i], lines[i] = e.Time, workspace.FormatEvent(e)
		}
		b.Queue(`INSERT INTO events (task_id, time, line) SELECT $1, t, l FROM unnest($2::timestamptz[], $3::text[]) AS u(t, l)`,
			c.id, times, lines)
	}
	b.Queue("DELETE FROM markers WHERE id = ANY($1)", append(ids, dups...))
	if err := c.tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write the commit of task %s: %w", c.id, err)
	}
	return nil
}

// decodeLocked is the task's state from its row (prev, read for update),
// or its initial state when the daemon wrote none (hasState false). A
// row holding last's bytes is last's state, not decoded again.
func (s *Store) decodeLocked(ctx context.Context, tx pgx.Tx, taskID string, hasState bool, prev string, last knownState) (workspace.State, error) {
	var st workspace.State
	switch {
	case hasState && prev == last.doc:
		return last.st, nil
	case hasState:
		if err := json.Unmarshal([]byte(prev), &st); err != nil {
			return st, fmt.Errorf("state of task %s does not parse: %w", taskID, err)
		}
		return st, nil
	}
	var doc string
	if err := tx.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1 FOR SHARE", taskID).Scan(&doc); err != nil {
		return st, fmt.Errorf("read task %s: %w", taskID, err)
	}
	var t workspace.Task
	if err := json.Unmarshal([]byte(doc), &t); err != nil {
		return st, fmt.Errorf("task %s does not parse: %w", taskID, err)
	}
	return machine.Init(t), nil
}

// read is what productsFor read: the products the done markers name,
// and the documents of the plan st tracks (plan.json and its version's
// file), by path; a path asked for and absent is not in the maps.
type read struct {
	products map[string][]byte
	plans    map[string]string
}

// productsFor reads the products the done markers of ms name and the
// plan documents of st's plan, by path, in one query.
func (s *Store) productsFor(ctx context.Context, tx pgx.Tx, taskID string, ms []waiting, st workspace.State) (read, error) {
	out := read{products: map[string][]byte{}, plans: map[string]string{}}
	paths, planPaths := []string{}, []string{} // not NULL arrays

	for _, m := range ms {
		if m.kind != workspace.KindDone {
			continue
		}
		var mk struct {
			OutputFile string `json:"output_file"`
		}
		if json.Unmarshal([]byte(m.body), &mk) == nil && mk.OutputFile != "" {
			paths = append(paths, mk.OutputFile)
		}
	}
	if st.PlanID != "" {
		planPaths = []string{"plan.json", planPath(st.PlanVersion)}
	}
	if len(paths)+len(planPaths) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, "SELECT path, body, path = ANY($2), path = ANY($3) FROM products WHERE task_id = $1 AND (path = ANY($2) OR path = ANY($3))",
		taskID, paths, planPaths)
	if err != nil {
		return out, fmt.Errorf("read products of task %s: %w", taskID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p, body string
		var named, plan bool
		if err := rows.Scan(&p, &body, &named, &plan); err != nil {
			return out, err
		}
		if named {
			out.products[p] = []byte(body)
		}
		if plan {
			out.plans[p] = body
		}
	}
	for _, p := range planPaths {
		if _, ok := out.plans[p]; !ok {
			out.plans[p] = "" // asked for, absent
		}
	}
	return out, rows.Err()
}

// planPath is the file of a plan's version.
func planPath(version int) string { return fmt.Sprintf("plans/plan_v%d.json", version) }

// judge turns a marker row into its journal record: taken with the
// product it names, or rejected with the reason, by the machine's rules
// (machine.JudgeMarker), the ones the file daemon applies to a marker
// file. A row is inserted whole, so nothing waits for a grace period: a
// marker refused now, softly or not, is rejected.
func (s *Store) judge(m waiting, products map[string][]byte, seq int64, now time.Time) workspace.JournalRecord {
	rec, _ := machine.JudgeMarker(m.kind, m.name, []byte(m.body), s.Settings(), func(outputFile string) machine.ProductRead {
		body, ok := products[outputFile]
		return machine.ProductRead{Data: body, Missing: !ok}
	}, seq, now)
	return rec
}
