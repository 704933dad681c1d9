package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Committing: one write transaction per chunk takes a task's waiting
// markers in insertion order, journals them with the next sequence
// numbers, folds them with the state machine, writes the state (the
// previous one kept as a backup), appends the events and deletes the
// markers — all or nothing. The transaction is the commit point and the
// recovery: a daemon killed anywhere before COMMIT leaves the markers
// waiting and nothing else. The control flow is here, once; a driver
// gives the transaction (CommitTx) and the statements where the
// databases differ: how the first reads and the writes go to the server
// (one round trip each on PostgreSQL), the fencing by the lease's epoch.

// DefaultChunk is the most markers of one task one commit takes when the
// daemon asks for no limit.
const DefaultChunk = 128

// known is a state document the daemon wrote, its decoding and the
// stamp of the row it wrote; changed is what the commit that wrote it
// changed of the state the committer knew before (nil: not known). doc
// is the encoder's bytes (foldCache), valid until its next call: nil
// when the commit wrote no state.
type known struct {
	doc []byte
	// pieces is the document as the encoder's pieces, valid until its
	// next call, when the driver stores it as parts (doc is nil then);
	// parts are the parts of the row written, with their ids.
	pieces  [][]byte
	parts   []keptPart
	st      workspace.State
	stamp   Stamp
	plan    knownPlan
	changed *statecheck.Changed
}

// knownPlan is a plan document and its decoding.
type knownPlan struct {
	body string
	p    *workspace.Plan
}

// Committer is the daemon's handle on one task (workspace.Committer): it
// remembers the state its last commit wrote and the row's stamp, so that
// a commit that finds the states row with that stamp reads and decodes
// nothing of the document, folds its
// markers into that state in place and encodes and checks only the
// entries they change (foldCache): that document was checked before it
// was written.
// Anything else in the row (a backup restored, an import) is decoded and
// the next state checked whole.
type Committer struct {
	s    *Store
	id   string
	run  func(ctx context.Context, fn func(CommitTx) error) error
	last known
	// cache is last's state folded in place by the next commit and the
	// encoding of its entries, while the row holds last's document.
	cache foldCache
	// progress is the task's subtasks in progress, for the timeout
	// detector.
	progress inProgress
}

// foldCache is what a committer keeps of the state it wrote last for the
// next commit, so that a commit costs what its markers change, not the
// size of the task: the state owned by a fold (machine.Fold), and the
// encoding of its entries (statecheck.Encoder). It holds for as long as
// the states row holds the document written last; a commit that fails
// drops it.
type foldCache struct {
	fold *machine.Fold
	enc  statecheck.Encoder
}

// NewCommitter is the committer of task id, whose commits run in the
// write transactions of run.
func (s *Store) NewCommitter(id string, run func(ctx context.Context, fn func(CommitTx) error) error) *Committer {
	return &Committer{s: s, id: id, run: run}
}

// Known is what the committer remembers of the state it wrote last: the
// document (a copy) and its decoding (none: ""). The decoding is the
// committer's own, folded in place by its next Commit: read it before.
func (c *Committer) Known() (string, workspace.State) {
	if c.last.doc == nil && c.last.pieces != nil {
		return string(bytes.Join(c.last.pieces, nil)), c.last.st
	}
	return string(c.last.doc), c.last.st
}

// Commit takes up to req.Max waiting markers of the task (in the order
// they were inserted), journals them, folds them and writes the new state,
// backup and events in one transaction, which it commits only while the
// lease's epoch is still req.Lead's (else ErrFenced, and nothing is
// written). A task with no state yet gets its first; a task with nothing
// waiting commits nothing.
func (c *Committer) Commit(ctx context.Context, req workspace.CommitRequest) (workspace.Applied, error) {
	max := req.Max
	if max <= 0 {
		max = DefaultChunk
	}
	var epoch int64
	if req.Lead != nil {
		epoch = req.Lead.Epoch()
	}
	var (
		a     workspace.Applied
		wrote known
	)
	err := c.run(ctx, func(tx CommitTx) error {
		var err error
		a, wrote, err = c.s.commit(ctx, tx, c.last, &c.cache, c.id, max, epoch)
		return err
	})
	if err != nil || a.Gone {
		c.last, c.cache, c.progress.items = known{}, foldCache{}, machine.Progress{}
		return a, err
	}
	if wrote.doc != nil || wrote.pieces != nil {
		c.last = wrote
	}
	plan := c.progress.plan
	if wrote.plan.p != nil {
		plan = wrote.plan.p
	}
	a.Finished = vocab.Finished(wrote.st.Status)
	a.Progress = c.progress.update(ctx, c.s, c.id, wrote.st, plan, wrote.changed)
	return a, nil
}

// commit is one chunk's transaction; last is what the daemon knows of
// the task's state (zero: nothing), wrote what it wrote (its doc empty
// when it wrote no state) and the task's state afterwards. It goes phase
// by phase: read, fence, load the state, judge and fold the markers,
// write.
func (s *Store) commit(ctx context.Context, tx CommitTx, last known, cache *foldCache, taskID string, max int, epoch int64) (workspace.Applied, known, error) {
	c := &commitTx{s: s, tx: tx, id: taskID, epoch: epoch, last: last, cache: cache}
	var err error
	if c.CommitRead, err = tx.ReadCommit(ctx, taskID, max, last.stamp); errors.Is(err, ErrNoRows) {
		return workspace.Applied{Gone: true}, known{}, nil // removed meanwhile
	} else if err != nil {
		return workspace.Applied{}, known{}, fmt.Errorf("read task %s to commit: %w", taskID, err)
	}
	if c.Epoch != epoch {
		return workspace.Applied{}, known{}, workspace.ErrFenced
	}
	if err := c.load(ctx); err != nil {
		return workspace.Applied{}, known{}, err
	}
	// The markers whose name the journal holds already (inserted while
	// the first of that name was being taken) are deleted without a
	// record, so that each name is journaled once.
	var ms []Marker
	var dups []int64
	for _, m := range c.Markers {
		if m.Taken {
			dups = append(dups, m.ID)
		} else {
			ms = append(ms, m)
		}
	}
	full := len(c.Markers) == max // more may be waiting
	if len(ms) == 0 {
		a, k, err := c.nothing(ctx, dups)
		a.More = full && err == nil
		return a, k, err
	}
	f, err := c.fold(ctx, ms)
	if err == nil {
		err = c.write(ctx, &f, ms, dups)
	}
	if err != nil {
		return workspace.Applied{}, known{}, err
	}
	a := workspace.Applied{Taken: len(f.recs), Seq: f.next.JournalSeq, Events: f.evs, More: full && f.stopped == nil,
		// When the machine stopped (a plan it cannot load), the markers
		// from that one on stay waiting and the next commit tries them
		// again.
		Stopped: f.stopped}
	for _, r := range f.recs {
		if r.Rejected != "" {
			a.Rejected++
		}
	}
	a.Marks = machine.Marks(f.next, f.recs, func(i int) time.Time { return ms[i].DroppedAt })
	if f.plan.p == nil {
		f.plan = last.plan
	}
	return a, known{doc: f.data, pieces: f.pieces, parts: f.parts, st: f.next, stamp: Stamp{c.PrevVersion + 1, epoch}, plan: f.plan, changed: f.changed}, nil
}

// commitTx is what one commit's transaction knows, phase by phase.
type commitTx struct {
	s     *Store
	tx    CommitTx
	id    string
	epoch int64
	last  known
	cache *foldCache

	CommitRead // read

	// load
	st    workspace.State
	valid *workspace.State // the state the next derives from, when known valid
	base  int64            // the last seq st reflects
}

// load decodes the task's state (or starts it) and brings it up to the
// journal: a state restored from a backup is behind the journal, and the
// records after it are folded again first, as the file store's recovery
// does.
func (c *commitTx) load(ctx context.Context) error {
	st, err := c.decode(ctx)
	if err != nil {
		return err
	}
	if c.HasState && c.Mine {
		c.valid = &st
	}
	if !c.HasState || st.JournalSeq == c.PrevSeq {
		c.st, c.base, err = Fold(ctx, c.tx, c.id, st, c.After)
	} else {
		// The row's journal_seq says otherwise than its document: the
		// document's is the one folded from.
		c.st, c.base, err = CatchUp(ctx, c.tx, c.id, st)
	}
	if c.base != c.PrevSeq {
		c.valid = nil // folded further: checked whole
	}
	if c.valid != nil {
		c.valid = &c.st
	}
	if c.valid == nil || c.cache.fold == nil || err != nil {
		// The row is not the document written last, or was folded
		// further: the cache does not hold it.
		*c.cache = foldCache{}
	}
	return err
}

// decode is the task's state from its row, or its initial state when
// the daemon wrote none. A row holding last's stamp is last's state, not
// read nor decoded again.
func (c *commitTx) decode(ctx context.Context) (workspace.State, error) {
	var st workspace.State
	switch {
	case c.HasState && c.Mine:
		return c.last.st, nil
	case c.HasState:
		if err := json.Unmarshal([]byte(c.Prev), &st); err != nil {
			return st, fmt.Errorf("state of task %s does not parse: %w", c.id, err)
		}
		return st, nil
	}
	var doc string
	if err := c.tx.QueryRow(ctx, "SELECT doc FROM tasks WHERE id = $1"+c.s.dl.Lock("SHARE"), c.id).Scan(&doc); err != nil {
		return st, fmt.Errorf("read task %s: %w", c.id, err)
	}
	var t workspace.Task
	if err := json.Unmarshal([]byte(doc), &t); err != nil {
		return st, fmt.Errorf("task %s does not parse: %w", c.id, err)
	}
	return machine.Init(t), nil
}

// nothing ends a commit that took no marker: it writes a new task's
// first state, and deletes the markers passed over.
func (c *commitTx) nothing(ctx context.Context, dups []int64) (workspace.Applied, known, error) {
	if len(dups) > 0 {
		if err := c.tx.DeleteMarkers(ctx, c.id, dups); err != nil {
			return workspace.Applied{}, known{}, err
		}
	}
	a := workspace.Applied{Seq: c.st.JournalSeq}
	if c.HasState {
		return a, known{st: c.st}, nil
	}
	data, err := atomicfile.Marshal(c.st)
	if err == nil {
		err = statecheck.Next(nil, c.st, data)
	}
	if err != nil {
		return workspace.Applied{}, known{}, fmt.Errorf("encode state of task %s: %w", c.id, err)
	}
	if _, err := c.tx.Exec(ctx, "INSERT INTO states (task_id, journal_seq, doc, epoch, version, updated_at) VALUES ($1, $2, $3, $4, 1, "+c.s.dl.Now+")",
		c.id, c.st.JournalSeq, string(data), c.epoch); err != nil {
		return workspace.Applied{}, known{}, fmt.Errorf("write the first state of task %s: %w", c.id, err)
	}
	return a, known{doc: data, st: c.st, stamp: Stamp{1, c.epoch}}, nil
}

// folded is what fold made of the markers: their records (those taken),
// the state they fold into, encoded and checked, its events, the error
// the machine stopped at if it did, the time they were judged at and the
// plan the state tracks.
type folded struct {
	recs []workspace.JournalRecord
	next workspace.State
	// data is the document, the encoder's bytes until its next call;
	// doc is the same bytes as a string, for the driver to send, not to
	// keep (CommitWrite.Doc).
	data []byte
	doc  string
	// pieces is the document as the encoder's pieces instead, when the
	// driver stores it as parts (Dialect.StatePartsFrom), with blocks saying
	// which are blocks (statecheck.Encoder.Blocks); parts are the parts
	// written, once written.
	pieces [][]byte
	blocks []bool
	parts  []keptPart
	// changed is the entries the markers changed of the state the
	// committer wrote last, when they were folded into it (nil: folded
	// into a state read from the row).
	changed *statecheck.Changed
	evs     []workspace.Event
	stopped error
	now     time.Time
	plan    knownPlan
}

// fold judges the markers with the machine (records with the next
// sequence numbers), folds the records into the state, keeps those taken
// (none is the error the machine stopped at) and encodes the state,
// checked against the schema where it differs from the state it derives
// from when that is known valid (statecheck.Next).
func (c *commitTx) fold(ctx context.Context, ms []Marker) (folded, error) {
	pr, err := c.inputs(ctx, ms)
	if err != nil {
		return folded{}, err
	}
	f := folded{now: Now(), recs: make([]workspace.JournalRecord, len(ms))}
	for i, m := range ms {
		// A row is inserted whole, so nothing waits for a grace period:
		// a marker refused now, softly or not, is rejected.
		f.recs[i], _ = machine.JudgeMarker(m.Kind, m.Name, []byte(m.Body), c.s.Settings(), func(outputFile string) machine.ProductRead {
			body, ok := pr.products[outputFile]
			return machine.ProductRead{Data: body, Missing: !ok}
		}, c.base+int64(i)+1, f.now)
	}
	fd := c.cache.fold
	if fd != nil {
		f.changed = &statecheck.Changed{} // filled below
	} else {
		fd = machine.NewFold(c.st, nil)
	}
	f.evs, f.stopped = fd.Continue(c.planOf(ctx, pr, &f.plan), f.recs)
	f.next, c.cache.fold = fd.State(), fd
	taken := 0
	for taken < len(f.recs) && f.recs[taken].Seq <= f.next.JournalSeq {
		taken++
	}
	if taken == 0 {
		return folded{}, fmt.Errorf("apply markers of task %s: %w", c.id, f.stopped)
	}
	f.recs = f.recs[:taken]
	changed := fd.Changed()
	if f.changed != nil {
		*f.changed = changed
	}
	if from := c.s.dl.StatePartsFrom; from > 0 && len(f.next.Subtasks)+len(f.next.Checkpoints)+len(f.next.Workers) >= from {
		// Stored as parts: the pieces are written as they are, never
		// joined (splitParts).
		pieces, _, err := c.cache.enc.EncodeParts(f.next, changed, c.valid != nil)
		if err != nil {
			return folded{}, fmt.Errorf("state of task %s would not validate, not written: %w", c.id, err)
		}
		f.pieces, f.blocks = pieces, c.cache.enc.Blocks()
		return f, nil
	}
	data, err := c.cache.enc.Encode(f.next, changed, c.valid != nil)
	if err != nil {
		return folded{}, fmt.Errorf("state of task %s would not validate, not written: %w", c.id, err)
	}
	// The encoder's bytes are its own until its next call, the next
	// commit's: the document is sent from them, not copied (504 KiB a
	// commit at 10,000 subtasks, most of a commit's allocations), and
	// kept as known until then.
	f.data, f.doc = data, unsafe.String(unsafe.SliceData(data), len(data))
	return f, nil
}

// inputs are what the judging reads: the products the done markers of
// ms name and the documents of the plan the state tracks (plan.json and
// its version's file), by path; a path asked for and absent is not in
// products, and "" in plans.
type inputs struct {
	products map[string][]byte
	plans    map[string]string
}

func (c *commitTx) inputs(ctx context.Context, ms []Marker) (inputs, error) {
	paths, planPaths := []string{}, []string{} // not NULL arrays
	for _, m := range ms {
		if m.Kind != workspace.KindDone {
			continue
		}
		var mk struct {
			OutputFile string `json:"output_file"`
		}
		if json.Unmarshal([]byte(m.Body), &mk) == nil && mk.OutputFile != "" {
			paths = append(paths, mk.OutputFile)
		}
	}
	// A plan's version is never written twice: the plan the cached fold
	// tracks need not be read again.
	known := false
	if fd := c.cache.fold; fd != nil {
		p := fd.Plan()
		known = p != nil && p.ID == c.st.PlanID && p.Version == c.st.PlanVersion
	}
	if c.st.PlanID != "" && !known {
		planPaths = []string{"plan.json", planPath(c.st.PlanVersion)}
	}
	out := inputs{products: map[string][]byte{}, plans: map[string]string{}}
	if len(paths)+len(planPaths) == 0 {
		return out, nil
	}
	var err error
	if out.products, out.plans, err = c.tx.ReadProducts(ctx, c.id, paths, planPaths); err != nil {
		return out, fmt.Errorf("read products of task %s: %w", c.id, err)
	}
	for _, p := range planPaths {
		if _, ok := out.plans[p]; !ok {
			out.plans[p] = "" // asked for, absent
		}
	}
	return out, nil
}

// planPath is the file of a plan's version.
func planPath(version int) string { return fmt.Sprintf("plans/plan_v%d.json", version) }

// planOf gives the machine the plan the state tracks, read with the
// products (as the loader would: plan.json, then its version's file),
// decoded once for as long as its bytes stay the same; it notes the plan
// it gave in plan.
func (c *commitTx) planOf(ctx context.Context, pr inputs, plan *knownPlan) func(int) (*workspace.Plan, error) {
	plans := PlanLoader(ctx, c.tx, c.id, c.st)
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

// write writes the commit: the journal rows, the previous state kept as
// a backup, the new state, its events, and the markers taken (and those
// passed over) deleted.
func (c *commitTx) write(ctx context.Context, f *folded, ms []Marker, dups []int64) error {
	n := len(f.recs)
	w := CommitWrite{TaskID: c.id, Epoch: c.epoch, Now: f.now, Seqs: make([]int64, n), Names: make([]string, n), Records: make([]string, n), Verdicts: make([]string, n),
		HasState: c.HasState, Keep: c.s.Settings().Backups.Keep,
		Seq: f.next.JournalSeq, Version: c.PrevVersion + 1, Doc: f.doc, Events: f.evs, Delete: make([]int64, n, n+len(dups))}
	for i, r := range f.recs {
		rb, err := atomicfile.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode journal record %d of task %s: %w", r.Seq, c.id, err)
		}
		if w.Verdicts[i], err = VerdictExcerpt(f.next, r, Stamp{w.Version, c.epoch}); err != nil {
			return fmt.Errorf("encode the verdict of journal record %d of task %s: %w", r.Seq, c.id, err)
		}
		w.Seqs[i], w.Names[i], w.Records[i], w.Delete[i] = r.Seq, ms[i].Name, string(rb), ms[i].ID
	}
	w.Delete = append(w.Delete, dups...)
	var kept []keptPart
	switch {
	case f.pieces != nil:
		w.Parts, kept, w.Follows, w.Replaced = c.splitParts(f.pieces, f.blocks)
	case c.s.dl.StatePartsFrom > 0:
		// Written whole on a driver that stores parts (a task that
		// shrank below the threshold): the parts of the row before, when
		// it is the committer's, are replaced, or all the task's when it
		// is not.
		if w.Follows = c.Mine; w.Follows {
			for _, p := range c.last.parts {
				w.Replaced = append(w.Replaced, p.id)
			}
		}
	}
	if err := c.tx.WriteCommit(ctx, w); err != nil {
		return err
	}
	for i := range kept {
		kept[i].id = w.Parts[i].ID
	}
	f.parts = kept
	return nil
}
