package daemon

import (
	"container/list"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// Spare files are empty temporary files made ahead of time for a task's
// next writes: state.json's (renameio pending files in the task
// directory) and the record files' (".spare-*" in journal/). Creating a
// file is the dearest step of a write on some filesystems: ext4 without a
// journal looks past every inode freed in the last minute before it picks
// one, which cost 0.2–1 ms of CPU a file here against 10 µs to open one,
// and every chunk of a burst writes two. So once a burst's markers are all
// taken the daemon makes the task's spares for the next one; a write that
// finds none creates its file as before.
//
// A task's spares are only made, used and dropped under its lock, or by
// the daemon once the task is forgotten. A crash leaves them as temporary
// files, which the next full load of the task removes.
const (
	// sparesPerTask is how many of each kind a task keeps: a round of
	// agents finishing together usually takes two chunks.
	sparesPerTask = 2
	// spareTasks is how many tasks hold spares at once (each keeps its
	// two directories and its spares open). When all are taken, the set
	// least recently filled gives way if it has not been filled for
	// spareIdle; otherwise the new task goes without, so that many tasks
	// taking markers in turn do not churn spares (each made and removed
	// costs more than the file it would have saved).
	spareTasks = 16
	spareIdle  = time.Minute
	// spareRecordPrefix names a record file's spare in journal/.
	spareRecordPrefix = ".spare-"
	// stateTempPrefix is how renameio names state.json's temporary
	// files, spares included.
	stateTempPrefix = ".state.json"
)

// spareSet is one task's spares.
type spareSet struct {
	id      string
	filled  time.Time // when last filled
	td, jr  *os.Root  // the task directory and its journal
	state   []*renameio.PendingFile
	records []spareRecord
	elem    *list.Element // in spares.order
}

type spareRecord struct {
	name string // in journal/
	f    *os.File
}

// spares holds the spare sets of the daemon's tasks, most recently filled
// first.
type spares struct {
	sets  map[string]*spareSet
	order *list.List
}

// fillSpares makes task id's spares up to sparesPerTask of each kind.
// The caller holds the task's lock. Failing to make one only means the
// next write creates its own file.
func (d *Daemon) fillSpares(id string) {
	s, evicted := d.spareSetOf(id)
	if evicted != nil {
		evicted.drop()
	}
	if s == nil {
		return
	}
	perm := d.ws.FilePerm()
	for len(s.state) < sparesPerTask {
		pf, err := renameio.NewPendingFile("state.json", renameio.WithRoot(s.td), renameio.WithStaticPermissions(perm))
		if err != nil {
			d.log.Debug("make spare", "task", id, "err", err)
			break
		}
		s.state = append(s.state, pf)
	}
	for len(s.records) < sparesPerTask {
		name := fmt.Sprintf("%s%016x", spareRecordPrefix, rand.Uint64())
		f, err := s.jr.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			d.log.Debug("make spare", "task", id, "err", err)
			break
		}
		s.records = append(s.records, spareRecord{name: name, f: f})
	}
}

// spareSetOf returns task id's spare set, opening it if it has none;
// when spareTasks hold spares, the set least recently filled is evicted
// (returned for the caller to drop) if it is idle, else the task gets
// none. It is nil as well when the task's directories cannot be opened.
func (d *Daemon) spareSetOf(id string) (s, evicted *spareSet) {
	now := time.Now()
	d.spareMu.Lock()
	s = d.spares.sets[id]
	if s != nil {
		s.filled = now
		d.spares.order.MoveToFront(s.elem)
	}
	full := d.spares.full(now)
	d.spareMu.Unlock()
	if s != nil || full {
		return s, nil
	}
	td, err := d.ws.Root().OpenRoot(workspace.TaskDir(id))
	if err != nil {
		return nil, nil
	}
	jr, err := td.OpenRoot(JournalDir)
	if err != nil {
		td.Close()
		return nil, nil
	}
	d.spareMu.Lock()
	defer d.spareMu.Unlock()
	if d.spares.full(now) { // another task took the room meanwhile
		td.Close()
		jr.Close()
		return nil, nil
	}
	if d.spares.order.Len() >= spareTasks {
		evicted = d.spares.order.Back().Value.(*spareSet)
		d.spares.order.Remove(evicted.elem)
		delete(d.spares.sets, evicted.id)
	}
	s = &spareSet{id: id, td: td, jr: jr, filled: now}
	s.elem = d.spares.order.PushFront(s)
	d.spares.sets[id] = s
	return s, evicted
}

// full reports whether spareTasks sets are held and none has been idle
// for spareIdle. The caller holds the daemon's spareMu.
func (sp *spares) full(now time.Time) bool {
	if sp.order.Len() < spareTasks {
		return false
	}
	return now.Sub(sp.order.Back().Value.(*spareSet).filled) < spareIdle
}

// dropSpares removes task id's spares. The caller holds the task's lock,
// or the task is no longer processed.
func (d *Daemon) dropSpares(id string) {
	d.spareMu.Lock()
	s := d.spares.sets[id]
	if s != nil {
		d.spares.order.Remove(s.elem)
		delete(d.spares.sets, id)
	}
	d.spareMu.Unlock()
	if s != nil {
		s.drop()
	}
}

// dropAllSpares removes every task's spares (the daemon is stopping).
func (d *Daemon) dropAllSpares() {
	d.spareMu.Lock()
	var all []*spareSet
	for _, s := range d.spares.sets {
		all = append(all, s)
	}
	d.spares.sets = map[string]*spareSet{}
	d.spares.order.Init()
	d.spareMu.Unlock()
	for _, s := range all {
		s.drop()
	}
}

// drop removes the set's files and closes its directories.
func (s *spareSet) drop() {
	for _, pf := range s.state {
		_ = pf.Cleanup()
	}
	for _, r := range s.records {
		r.f.Close()
		_ = s.jr.Remove(r.name)
	}
	s.state, s.records = nil, nil
	s.td.Close()
	s.jr.Close()
}

// takeSpareState pops a pending state.json of task id, with the task
// directory it is in.
func (d *Daemon) takeSpareState(id string) (*renameio.PendingFile, *os.Root) {
	d.spareMu.Lock()
	defer d.spareMu.Unlock()
	s := d.spares.sets[id]
	if s == nil || len(s.state) == 0 {
		return nil, nil
	}
	pf := s.state[len(s.state)-1]
	s.state = s.state[:len(s.state)-1]
	return pf, s.td
}

// takeSpareRecord pops a record file's spare of task id, with the
// journal it is in.
func (d *Daemon) takeSpareRecord(id string) (spareRecord, *os.Root, bool) {
	d.spareMu.Lock()
	defer d.spareMu.Unlock()
	s := d.spares.sets[id]
	if s == nil || len(s.records) == 0 {
		return spareRecord{}, nil, false
	}
	r := s.records[len(s.records)-1]
	s.records = s.records[:len(s.records)-1]
	return r, s.jr, true
}

// writeState replaces task id's state.json with data durably: through a
// spare when the task has one, else as every other file is written. A
// spare that fails (removed meanwhile, say) is given up for the usual way.
func (d *Daemon) writeState(id string, data []byte) error {
	if pf, td := d.takeSpareState(id); pf != nil {
		err := writePending(td, pf, data)
		if err == nil {
			err = atomicfile.SyncDir(td, ".")
		}
		if err == nil {
			return nil
		}
		_ = pf.Cleanup()
		d.log.Debug("spare state file failed, writing anew", "task", id, "err", err)
	}
	return d.ws.Write(statePath(id), data)
}

// writePending writes data into a pending file made earlier in dir and
// renames it over its target.
func writePending(dir *os.Root, pf *renameio.PendingFile, data []byte) error {
	if _, err := pf.Write(data); err != nil {
		return err
	}
	if err := stillNamed(dir, filepath.Base(pf.Name()), pf.File); err != nil {
		return err
	}
	return pf.CloseAtomicallyReplace()
}

// stillNamed checks that name in dir is still the file f: a rename moves
// whatever the name holds at the time, and a spare waits there a while.
func stillNamed(dir *os.Root, name string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	cur, err := dir.Lstat(name)
	if err != nil {
		return err
	}
	if !os.SameFile(fi, cur) {
		return fmt.Errorf("spare %s was replaced", name)
	}
	return nil
}

// writeSpareRecord writes data into a record file's spare of task id and
// renames it to name in the journal (not fsynced: see settle). It reports
// false when the task has no spare or the spare failed, and the caller
// writes the file anew.
func (d *Daemon) writeSpareRecord(id, name string, data []byte) bool {
	r, jr, ok := d.takeSpareRecord(id)
	if !ok {
		return false
	}
	err := writeSpare(jr, r, name, data)
	if err != nil {
		_ = jr.Remove(r.name)
		d.log.Debug("spare record file failed, writing anew", "task", id, "err", err)
	}
	return err == nil
}

func writeSpare(jr *os.Root, r spareRecord, name string, data []byte) error {
	_, err := r.f.Write(data)
	if err == nil {
		err = stillNamed(jr, r.name, r.f)
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return jr.Rename(r.name, name)
}

// removeStateTemps removes leftover temporary files of state.json (spares
// or writes cut short by a crash) from task id's directory, and nothing
// else (see isStateTemp). The caller holds the task's lock, which every
// writer of state.json takes.
func (d *Daemon) removeStateTemps(id string) {
	f, err := d.ws.Root().Open(workspace.TaskDir(id))
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
			_ = d.ws.Root().Remove(path.Join(workspace.TaskDir(id), n))
		}
	}
}

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
