package files

import (
	"context"
	"fmt"
	"path"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Committing: the records of a chunk are written beside its taken
// markers, folded into the state by the state machine, their events
// appended to events.log, and the new state written once (group commit),
// its predecessor kept as a backup; the events are then shown to the
// friction detectors. Why every event is logged once, in order, even when
// a commit fails: eventlog.go.

// journal makes the taking of recs durable and writes their records,
// while the state machine folds them into n (the state as folded so far,
// not yet written): the state that reflects them is written after both,
// by commit. taken names the taken markers in the journal.
func (t *committer) journal(dirs taskDirs, recs []workspace.JournalRecord, taken []string, n *nextState) error {
	// The renames are the commit point: make them durable and write the
	// records. The taken markers (written durably by their agents) are
	// the journal's durable copy until settle has made the records
	// durable too.
	journaled := make(chan error, 1)
	var file string
	go func() {
		var err error
		if err = dirs.jrf.Sync(); err != nil {
			err = fmt.Errorf("sync journal of task %s: %w", t.id, err)
		} else {
			file, err = writeRecords(t.s, dirs, t.id, recs, false)
		}
		journaled <- err
	}()
	t.apply(n, recs)
	if err := <-journaled; err != nil {
		// The markers are taken but their records not written: reload
		// the task from disk next time, which writes them from the taken
		// markers.
		t.forget()
		return err
	}
	t.leave(settlement{files: []string{file}, taken: taken})
	return nil
}

// commit encodes and checks the folded state n and writes it.
func (t *committer) commit(ctx context.Context, n nextState) error {
	err := t.encode(&n)
	if err == nil {
		err = t.write(ctx, n, t.fi != nil, "")
	}
	if err != nil {
		// The records are journaled but not all applied: reload the task
		// from disk next time, which replays them past state.json's
		// journal_seq.
		t.forget()
	}
	return err
}

// nextState is a task's state with records folded in, encoded and
// checked, ready to be written.
type nextState struct {
	st      workspace.State
	evs     []workspace.Event
	parts   [][]byte        // st encoded, in pieces (statecheck.Encoder.EncodeParts)
	plan    *workspace.Plan // the plan st tracks, when a record carried it
	applied int             // how many of the records it reflects
	stopped error           // why the state machine stopped before the rest
	// tornLog: events.log's last line was cut short (a full disk): the
	// events are appended on a line of their own.
	tornLog bool
	// changed names the entries st changed since the state last written
	// (All when it does not derive from it by a fold).
	changed statecheck.Changed
}

// unwritten is the task's state as last written or read, for records to
// be folded into.
func (t *committer) unwritten() nextState { return nextState{st: t.st, plan: t.plan} }

// fold folds recs into the task's state through the state machine, and
// encodes and checks the result. It writes nothing: the committer's fold
// holds the result until it is written, or is forgotten with it.
func (t *committer) fold(recs []workspace.JournalRecord) (nextState, error) {
	n := t.unwritten()
	t.apply(&n, recs)
	return n, t.encode(&n)
}

// apply folds recs into n through the state machine, after the records
// folded into it before: in place, into the committer's fold of its
// state (made now if none is), which n then shares.
func (t *committer) apply(n *nextState, recs []workspace.JournalRecord) {
	if t.folder == nil {
		t.folder = machine.NewFold(n.st, n.plan)
	}
	evs, stopped := t.folder.Continue(t.planLoader(n.st, n.plan), recs)
	st := t.folder.State()
	n.st, n.evs, n.stopped = st, append(n.evs, evs...), stopped
	for _, rec := range recs {
		if rec.Seq > st.JournalSeq {
			break
		}
		if p := rec.Plan; p != nil && p.ID == st.PlanID && p.Version == st.PlanVersion {
			n.plan = p
		}
		n.applied++
	}
}

// encode encodes the folded state n and checks it: only the entries the
// fold changed since the state last written, when that one was checked
// (statecheck.Encoder); everything when n was not folded.
func (t *committer) encode(n *nextState) error {
	n.changed = statecheck.Changed{All: true}
	if t.folder != nil {
		n.changed = t.folder.Changed()
	}
	var err error
	if n.parts, _, err = t.enc.EncodeParts(n.st, n.changed, t.valid); err != nil {
		return fmt.Errorf("state of task %s would not validate, not written: %w", t.id, err)
	}
	return nil
}

// write appends the events of a folded state to events.log, then writes
// the state as state.json, backing up the previous one first when
// backupOld is set. The events come first so that a state on disk always
// has its events in the log (see eventlog.go): an append that fails fails
// the write, and state.json is left as it was. restoredFrom, when set,
// says state.json was corrupt and where the state came from: one
// state_restored event stands for the replay.
//
// When the state machine stopped at a record (its plan cannot be loaded),
// the state of the records before it is written and write returns why it
// stopped; the records from that one on stay in the journal, past
// journal_seq, for the next load.
func (t *committer) write(ctx context.Context, n nextState, backupOld bool, restoredFrom string) error {
	s := t.s
	evs := n.evs
	if restoredFrom != "" {
		evs = []workspace.Event{{Time: s.Now().UTC(), Name: EventStateRestored, TaskID: t.id,
			Attrs: map[string]string{"from": restoredFrom, "journal_seq": fmt.Sprint(n.st.JournalSeq)}}}
	}
	if err := t.appendEvents(ctx, evs, n.tornLog); err != nil {
		return err
	}
	if backupOld {
		// Linked only: settle prunes backups/ and makes it durable.
		bs := t.backups()
		add, src := bs, statePath(t.id)
		if t.open != nil {
			add, src = t.backupsIn(t.open.td, ""), path.Base(src)
		}
		if _, err := add.Add(src); err != nil {
			return err
		}
		t.leave(settlement{backups: true, set: bs})
	}
	if err := t.writeState(n.parts); err != nil {
		return fmt.Errorf("write state of task %s: %w", t.id, err)
	}
	changed := n.changed
	if n.plan != t.plan {
		t.complexity, changed = nil, statecheck.Changed{All: true}
	}
	t.st, t.plan, t.valid = n.st, n.plan, true
	t.noteWritten(n.st)
	t.noteProgress(changed)
	s.log().Debug("state written", "task", t.id, "journal_seq", n.st.JournalSeq, "records", n.applied)
	if n.stopped != nil {
		return fmt.Errorf("apply journal of task %s: state written through seq %d: %w", t.id, n.st.JournalSeq, n.stopped)
	}
	return nil
}

// writeState writes the state's pieces as state.json and remembers the
// file written: through the task directory take holds open, else from the
// root.
func (t *committer) writeState(parts [][]byte) error {
	s := t.s
	if t.open != nil {
		fi, err := atomicfile.WriteBuffersAt(t.open.tdf, "state.json", parts, s.FilePerm())
		t.fi = fi
		return err
	}
	if err := s.WriteBuffers(statePath(t.id), parts); err != nil {
		return err
	}
	t.fi, _ = s.Root().Lstat(statePath(t.id))
	return nil
}

// appendEvents appends the events of a commit to events.log in one write,
// ending first a last line cut short when torn is set, and notes them as
// the commit's events.
func (t *committer) appendEvents(ctx context.Context, evs []workspace.Event, torn bool) error {
	if len(evs) == 0 {
		return nil
	}
	if torn {
		if err := endLine(t.s, t.id); err != nil {
			return err
		}
	}
	var err error
	if t.open != nil {
		err = t.s.appendEventsIn(t.open.tdf, t.id, evs)
	} else {
		err = t.s.AppendEvents(ctx, t.id, evs)
	}
	if err != nil {
		return fmt.Errorf("append events of task %s (state not written; they are appended again when it is): %w", t.id, err)
	}
	t.events = append(t.events, evs...)
	return nil
}

// writeRecords writes the records of one chunk (consecutive seqs, in
// order) atomically in one file: RecordName for one record, BatchName for
// more (a temporary dot-file renamed into place, so a reader never sees a
// torn file). durable writes it with atomicfile (fsync of the file and of
// the directory); otherwise it is only renamed into place and settle makes
// it durable later, the taken markers beside it being the durable copy
// meanwhile. Every record comes from machine.Judgement.Record (through
// examined.record), which turns one that would not match the journal
// schema into a rejection saying why: none written fails it. It returns
// the file's name.
func writeRecords(ws *Store, dirs taskDirs, id string, recs []workspace.JournalRecord, durable bool) (string, error) {
	var (
		name string
		data []byte
		err  error
	)
	if len(recs) == 1 {
		name = RecordName(recs[0].Seq)
		data, err = atomicfile.Marshal(recs[0])
	} else {
		name = BatchName(recs[0].Seq, recs[len(recs)-1].Seq)
		data, err = atomicfile.Marshal(JournalBatch{Records: recs})
	}
	if err != nil {
		return "", fmt.Errorf("encode journal %s of task %s: %w", name, id, err)
	}
	if durable {
		err = atomicfile.WriteFile(dirs.jr, name, data, ws.FilePerm())
	} else {
		// Deliberately not fsynced here: see settle.
		tmp := ".tmp-" + name
		if err = createAt(dirs.jrf, tmp, data, ws.FilePerm()); err == nil {
			err = renameAt(dirs.jrf, tmp, dirs.jrf, name)
		}
	}
	if err != nil {
		return "", fmt.Errorf("write journal %s of task %s: %w", name, id, err)
	}
	return name, nil
}

// planLoader gives machine.Continue the plan st tracks when no
// record in the batch carries it: the cached one, else plan.json or
// plans/plan_v<N>.json, else the journal record that proposed it.
func (t *committer) planLoader(st workspace.State, plan *workspace.Plan) func(int) (*workspace.Plan, error) {
	return func(version int) (*workspace.Plan, error) {
		if plan != nil && plan.Version == version && plan.ID == st.PlanID {
			return plan, nil
		}
		return loadPlan(context.Background(), t.s, t.id, st.PlanID, version)
	}
}

// loadPlan finds plan planID version of a task: plan.json or
// plans/plan_v<N>.json when it is that plan, else the newest journal
// record that carries it.
func loadPlan(ctx context.Context, ws *Store, id, planID string, version int) (*workspace.Plan, error) {
	if p, err := ws.ReadPlan(ctx, id, version); err == nil && p.ID == planID && p.Version == version {
		return p, nil
	}
	recs, err := journalRecords(ws, id)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if p := recs[i].Plan; p != nil && p.ID == planID && p.Version == version {
			return p, nil
		}
	}
	return nil, fmt.Errorf("plan %s v%d of task %s: not in plans/ nor in the journal", planID, version, id)
}
