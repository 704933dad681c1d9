package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Recovery: how a task's state is brought up to date with its journal
// when the daemon starts, when state.json changed behind its back, or when
// it is corrupt. The journal's layout and its crash cases are described in
// journal.go.

// EventStateRestored is the event logged when a corrupt state.json was
// replaced by a backup (attrs from=<backup name>) or rebuilt from the
// journal alone (from=journal).
const EventStateRestored = "state_restored"

// ValidateState checks that data is a valid state.json of task id: it
// parses, matches the state schema, and names the task.
func ValidateState(id string, data []byte) (workspace.State, error) {
	if err := schemas.Validate(schemas.KindState, data); err != nil {
		return workspace.State{}, err
	}
	var st workspace.State
	if err := json.Unmarshal(data, &st); err != nil {
		return workspace.State{}, err
	}
	if st.TaskID != id {
		return workspace.State{}, fmt.Errorf("state of task %q, not %q", st.TaskID, id)
	}
	if st.Subtasks == nil || st.Checkpoints == nil || st.Workers == nil || st.Errors == nil {
		return workspace.State{}, errors.New("state has null maps")
	}
	return st, nil
}

func (t *committer) backups() *backup.Set {
	return t.backupsIn(t.s.Root(), workspace.TaskDir(t.id))
}

// backupsIn is the task's backups as a Set rooted at root, where the
// task directory is dir ("" for root itself).
func (t *committer) backupsIn(root *os.Root, dir string) *backup.Set {
	set := t.s.Settings()
	return &backup.Set{Root: root, Dir: path.Join(dir, "backups"), Prefix: "state_",
		Keep: set.Backups.Keep, MaxBytes: int64(set.Limits.MaxFileBytes), DirPerm: t.s.DirPerm(), Now: t.s.Now}
}

// upToDate reads the task without its lock and reports whether it needs
// nothing: state.json is still the file last written, or it is readable
// (see glanceState) and nothing in the journal is past it. It leaves the
// state read in t.st (not cached: only a load under the lock caches).
// look is the task directory.
func (t *committer) upToDate(look *taskLook) bool {
	if t.loaded {
		if fi, err := look.lstatState(); err == nil && sameFile(t.fi, fi) {
			return true
		}
	}
	data, err := look.state()
	if err != nil {
		return false
	}
	st, err := glanceState(t.id, data)
	if err != nil {
		return false
	}
	l, err := look.journal()
	if err != nil || l.maxSeq > st.JournalSeq || len(l.taken) > 0 {
		return false
	}
	t.forget()
	t.st, t.current = st, true
	t.noteProgress(statecheck.Changed{All: true})
	return true
}

// finishedHead is what the daemon needs of a finished task's state.json
// to pass over it.
type finishedHead struct {
	TaskID     string `json:"task_id"`
	Status     string `json:"status"`
	JournalSeq int64  `json:"journal_seq"`
}

// glanceState reads data, task id's state.json, for a look that takes
// nothing. A finished task's state is only parsed for its id, status and
// journal_seq (t.st holds no more): nothing else of it is used until a
// marker comes, and then load checks it whole and restores it from a
// backup when it does not validate (validate names it invalid meanwhile).
// At 20,000 tasks, checking every finished state against the schema was
// most of the daemon's start-up. A state that does not parse, names
// another task or is not finished is checked whole (ValidateState): an
// active task's subtasks feed the timeout detector.
func glanceState(id string, data []byte) (workspace.State, error) {
	var h finishedHead
	if err := json.Unmarshal(data, &h); err != nil {
		return workspace.State{}, err
	}
	if h.TaskID == id && vocab.Finished(h.Status) {
		return workspace.State{TaskID: h.TaskID, Status: h.Status, JournalSeq: h.JournalSeq}, nil
	}
	return ValidateState(id, data)
}

// lstatState is the Lstat of the task's state.json, through the task
// directory when it is open.
func (t *committer) lstatState() (os.FileInfo, error) {
	if t.open != nil {
		return t.open.td.Lstat("state.json")
	}
	return t.s.Root().Lstat(statePath(t.id))
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// load brings the task's state up to date with its journal. It keeps the
// cached state when state.json is still the file last written; otherwise
// (or when force is set) it reads state.json, restores the newest valid
// backup when it is corrupt (or starts from task.json when no backup is
// valid), finishes the records of markers taken before a crash, and
// replays every record past the state's journal_seq. The caller holds the
// task lock. It returns errNoTask when task.json is missing.
func (t *committer) load(ctx context.Context, force bool) error {
	s := t.s
	if t.loaded && !force {
		if fi, err := t.lstatState(); err == nil && sameFile(t.fi, fi) {
			return nil
		}
	}
	t.forget()
	tk, err := s.GetTask(ctx, t.id)
	if errors.Is(err, workspace.ErrNotFound) {
		return errNoTask
	}
	if err != nil {
		return err
	}
	var (
		write, backupOld bool
		restoredFrom     string
	)
	data, err := s.ReadFile(statePath(t.id))
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		t.st, write = machine.Init(tk), true
	case err == nil:
		if t.st, err = ValidateState(t.id, data); err == nil {
			t.valid = true
			t.fi, _ = s.Root().Lstat(statePath(t.id))
			backupOld = true
			break
		}
		fallthrough
	default:
		write = true
		b, bdata, skipped, berr := t.backups().NewestValid(func(b []byte) error { _, err := ValidateState(t.id, b); return err })
		for _, sk := range skipped {
			s.log().Warn("backup not valid", "task", t.id, "backup", sk.Backup.Name, "err", sk.Err)
		}
		if berr == nil {
			t.st, _ = ValidateState(t.id, bdata)
			t.valid = true
			restoredFrom = b.Name
		} else {
			t.st, restoredFrom = machine.Init(tk), "journal"
		}
		s.log().Warn("state.json corrupt, restoring", "task", t.id, "from", restoredFrom, "reason", err)
	}
	l, err := listJournal(s, t.id)
	if err != nil {
		return err
	}
	// Leftovers of writes cut short: the task starts afresh.
	for _, n := range l.temps {
		_ = s.Root().Remove(path.Join(journalPath(t.id), n))
	}
	t.removeStateTemps()
	t.next = max(l.maxSeq, t.st.JournalSeq) + 1
	recs, err := t.journalPast(&l)
	if err != nil {
		return err
	}
	t.loaded = true
	if len(recs) > 0 || write {
		n, err := t.replay(recs, restoredFrom != "")
		if err == nil {
			err = t.write(ctx, n, backupOld, restoredFrom)
		}
		if err != nil {
			t.forget()
			return err
		}
	}
	t.noteProgress(statecheck.Changed{All: true})
	return nil
}

// journalPast returns the records past the state's journal_seq, in order:
// those in record files, and those of markers taken before a crash, whose
// records it writes now (also for a marker at or before journal_seq whose
// record was lost, which is then written but not applied again). A record
// that cannot be read or written stops it: applying the ones after it
// would skip a marker for good, so the task waits until it can.
func (t *committer) journalPast(l *journalListing) ([]workspace.JournalRecord, error) {
	read, err := t.settleLeftovers(l)
	if err != nil {
		return nil, err
	}
	var recs []workspace.JournalRecord
	for _, seq := range l.seqsAfter(0) {
		tk, isTaken := l.taken[seq]
		if seq <= t.st.JournalSeq && !isTaken {
			continue
		}
		var rec workspace.JournalRecord
		if isTaken {
			// Crashed between taking the marker and writing its record.
			rec, err = t.finishTaken(tk)
		} else {
			name := l.records[seq]
			rs, ok := read[name]
			if !ok {
				if rs, err = readRecordFile(t.s, t.id, l.files[name]); err == nil {
					read[name] = rs
				}
			}
			if err == nil {
				rec = rs[seq-l.files[name].seq]
			}
		}
		if err != nil {
			return nil, fmt.Errorf("journal record %d of task %s: %w", seq, t.id, err)
		}
		if seq > t.st.JournalSeq {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// settleLeftovers deals with the record files that still have taken
// markers beside them (written, maybe not made durable: see settle). A
// file that reads back whole is made durable and its taken markers
// removed; one that does not is removed, and its records are written again
// from their taken markers by the caller. l is updated to match; the
// files read are returned by name, with their records.
func (t *committer) settleLeftovers(l *journalListing) (map[string][]workspace.JournalRecord, error) {
	s := t.s
	read := map[string][]workspace.JournalRecord{}
	bad := map[string]bool{}
	var w settlement
	for seq, tk := range l.taken {
		name, ok := l.records[seq]
		if !ok || bad[name] {
			continue
		}
		if _, ok := read[name]; !ok {
			rs, err := readRecordFile(s, t.id, l.files[name])
			if err != nil {
				s.log().Warn("journal record file torn; writing its records again from the taken markers", "task", t.id, "file", name, "err", err)
				_ = s.Root().Remove(path.Join(journalPath(t.id), name))
				bad[name] = true
				continue
			}
			read[name] = rs
			w.files = append(w.files, name)
		}
		w.taken = append(w.taken, tk.name)
		delete(l.taken, seq) // its record is in a file that reads whole
	}
	for name := range bad {
		e := l.files[name]
		for seq := e.seq; seq <= e.last; seq++ {
			if l.records[seq] == name {
				delete(l.records, seq)
			}
		}
		delete(l.files, name)
	}
	if len(w.taken) == 0 {
		return read, nil
	}
	if err := w.settle(s, t.id); err != nil {
		return nil, err
	}
	return read, nil
}

// finishTaken writes the record of a marker taken before a crash: it is
// judged as it is (no grace: it is already taken) and stamped now. The
// record is written durably and the taken marker removed.
func (t *committer) finishTaken(tk journalEntry) (workspace.JournalRecord, error) {
	s := t.s
	dirs, err := openTaskDirs(s, t.id)
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	defer dirs.close()
	fi, err := dirs.jr.Lstat(tk.name)
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	kind, _ := workspace.IsMarkerName(tk.marker)
	ex := examine(s, dirs.tdf, dirs.jrf, tk.name, tk.marker, kind, fi, s.Now(), -1)
	rec := ex.record(tk.seq, s.Now())
	if _, err := writeRecords(s, dirs, t.id, []workspace.JournalRecord{rec}, true); err != nil {
		return workspace.JournalRecord{}, err
	}
	removeTaken(dirs.td, []string{tk.name})
	return rec, nil
}

// removeStateTemps removes leftover temporary files of state.json (writes
// cut short by a crash) from the task directory, and nothing else (see
// isStateTemp). The caller holds the task's lock, which every writer of
// state.json takes.
func (t *committer) removeStateTemps() {
	f, err := t.s.Root().Open(workspace.TaskDir(t.id))
	if err != nil {
		return
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return
	}
	for _, n := range names {
		if isStateTemp(n) {
			_ = t.s.Root().Remove(path.Join(workspace.TaskDir(t.id), n))
		}
	}
}

// stateTempPrefix is how renameio names state.json's temporary files.
const stateTempPrefix = ".state.json"

// isStateTemp reports whether name is one renameio gives state.json's
// temporary files: the prefix and a non-negative decimal number, nothing
// else.
func isStateTemp(name string) bool {
	num, ok := strings.CutPrefix(name, stateTempPrefix)
	if !ok || num == "" {
		return false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
