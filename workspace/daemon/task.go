package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// EventStateRestored is the event logged when a corrupt state.json was
// replaced by a backup (attrs from=<backup name>) or rebuilt from the
// journal alone (from=journal).
const EventStateRestored = "state_restored"

// daemonAgent names the daemon in the lock holder records it leaves.
const daemonAgent = "workspaced-daemon"

// taskCache is what the daemon remembers of a task between bursts, so a
// burst costs no re-read of state.json or of the journal. It is touched
// only by the goroutine processing the task (never two at once).
type taskCache struct {
	st   workspace.State
	plan *workspace.Plan // the plan st tracks, when known
	next int64           // the next journal sequence number
	fi   os.FileInfo     // state.json as last written or read; nil if none
	// valid: st has passed the state schema (it was read and validated,
	// or validated before it was written), so a commit need only check
	// what it changes.
	valid bool
	// frags: the encodings of st's entries once it has been written, for
	// the next write to reuse (see encodeState).
	frags fragments
}

// outcome is what processing a task tells the loop.
type outcome struct {
	id       string
	finished bool      // the task is completed, failed or cancelled
	noTask   bool      // no task.json (yet): watch, do not process
	gone     bool      // the task directory is gone
	waitTill time.Time // a marker waits for its grace period until then
	taken    int       // markers journaled
	err      error
}

func statePath(id string) string   { return path.Join(workspace.TaskDir(id), "state.json") }
func journalPath(id string) string { return path.Join(workspace.TaskDir(id), JournalDir) }

func (d *Daemon) backups(id string) *backup.Set {
	s := d.ws.Settings()
	return &backup.Set{Root: d.ws.Root(), Dir: path.Join(workspace.TaskDir(id), "backups"), Prefix: "state_",
		Keep: s.Backups.Keep, MaxBytes: int64(s.Limits.MaxFileBytes), DirPerm: d.ws.DirPerm(), Now: d.now}
}

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

// processTask takes the task's lock, brings its state up to date with its
// journal (recovering a corrupt or missing state.json), takes every marker
// waiting in its directory and commits them in one state write. w says
// which markers woke it. recover forces the load from disk (start-up, and
// after an outside change).
func (d *Daemon) processTask(ctx context.Context, id string, w wake, recover bool) (out outcome) {
	out.id = id
	if !recover && !d.mayHaveMarkers(id, w) {
		if c := d.cached(id); c != nil {
			out.finished = vocab.Finished(c.st.Status)
			return out
		}
	}
	if recover && !d.hasMarkers(id) {
		// The cheap path of a start-up or rescan: a valid state with
		// nothing past it in the journal needs no lock and no write.
		if c, ok := d.upToDate(id); ok {
			out.finished = vocab.Finished(c.st.Status)
			return out
		}
	}
	d.busyNow() // before anything waits for the disk: settle steps aside
	lk, err := d.ws.LockTask(ctx, id, daemonAgent)
	if err != nil {
		out.err = err
		return out
	}
	defer lk.Release()
	if _, err := d.ws.Root().Lstat(workspace.TaskDir(id)); errors.Is(err, fs.ErrNotExist) {
		// Removed by cleanup while we waited for its lock.
		d.forget(id)
		out.gone = true
		return out
	}
	c, err := d.load(id, recover)
	if errors.Is(err, errNoTask) {
		out.noTask = true
		return out
	}
	if err != nil {
		out.err = err
		return out
	}
	d.remember(id, c)
	out.finished = vocab.Finished(c.st.Status)
	taken, waitTill, err := d.takeMarkers(ctx, id, c)
	out.taken, out.waitTill = taken, waitTill
	if err != nil {
		out.err = err
		return out
	}
	out.finished = vocab.Finished(c.st.Status)
	return out
}

var errNoTask = errors.New("no task.json yet")

// hasMarkers reports whether the task directory holds a marker name.
func (d *Daemon) hasMarkers(id string) bool {
	names, err := d.markerNames(id)
	return err != nil || len(names) > 0
}

// mayHaveMarkers reports whether the task directory may hold a marker:
// when w names markers, whether one of them is still there (a look-up of
// each name, which does not read the directory: while agents are dropping
// markers, reading it waits for their renames and fsyncs); otherwise
// hasMarkers.
func (d *Daemon) mayHaveMarkers(id string, w wake) bool {
	if w.all || len(w.names) == 0 {
		return d.hasMarkers(id)
	}
	for _, n := range w.names {
		if _, err := d.ws.Root().Lstat(markerPath(id, n)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// markerNames lists the marker names in a task directory.
func (d *Daemon) markerNames(id string) ([]string, error) {
	f, err := d.ws.Root().Open(workspace.TaskDir(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMarkerNames(f)
}

// markerNamesIn lists the marker names in the task directory td.
func markerNamesIn(td *os.Root) ([]string, error) {
	f, err := td.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMarkerNames(f)
}

func readMarkerNames(f *os.File) ([]string, error) {
	var out []string
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if _, ok := workspace.IsMarkerName(n); ok {
				out = append(out, n)
			}
		}
		if err == io.EOF || len(names) == 0 {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// upToDate reads a task without its lock and reports whether it needs
// nothing: state.json valid and nothing in the journal past it.
func (d *Daemon) upToDate(id string) (*taskCache, bool) {
	if c := d.cached(id); c != nil {
		if fi, err := d.ws.Root().Lstat(statePath(id)); err == nil && sameFile(c.fi, fi) {
			return c, true
		}
	}
	data, err := d.ws.ReadFile(statePath(id))
	if err != nil {
		return nil, false
	}
	st, err := ValidateState(id, data)
	if err != nil {
		return nil, false
	}
	l, err := listJournal(d.ws, id)
	if err != nil || l.maxSeq > st.JournalSeq || len(l.taken) > 0 {
		return nil, false
	}
	d.noteProgress(id, st, nil)
	return &taskCache{st: st}, true
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// load returns the task's state brought up to date with its journal. It
// uses the cached state when state.json is still the file the daemon last
// wrote; otherwise (or when force is set) it reads state.json, restores
// the newest valid backup when it is corrupt (or rebuilds from task.json
// when no backup is valid), finishes the records of markers taken before
// a crash, and replays every record past the state's journal_seq. The
// caller holds the task lock.
func (d *Daemon) load(id string, force bool) (*taskCache, error) {
	if c := d.cached(id); c != nil && !force {
		if fi, err := d.ws.Root().Lstat(statePath(id)); err == nil && sameFile(c.fi, fi) {
			return c, nil
		}
	}
	task, err := d.ws.GetTask(id)
	if errors.Is(err, workspace.ErrNotFound) {
		return nil, errNoTask
	}
	if err != nil {
		return nil, err
	}
	c := &taskCache{}
	var (
		write, backupOld bool
		restoredFrom     string
		restoreWhy       string
	)
	data, err := d.ws.ReadFile(statePath(id))
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		c.st, write = machine.Init(task), true
	case err == nil:
		if c.st, err = ValidateState(id, data); err == nil {
			c.valid = true
			c.fi, _ = d.ws.Root().Lstat(statePath(id))
			backupOld = true
			break
		}
		fallthrough
	default:
		restoreWhy = err.Error()
		write = true
		b, bdata, skipped, berr := d.backups(id).NewestValid(func(b []byte) error { _, err := ValidateState(id, b); return err })
		for _, s := range skipped {
			d.log.Warn("backup not valid", "task", id, "backup", s.Backup.Name, "err", s.Err)
		}
		if berr == nil {
			c.st, _ = ValidateState(id, bdata)
			c.valid = true
			restoredFrom = b.Name
		} else {
			c.st, restoredFrom = machine.Init(task), "journal"
		}
		d.log.Warn("state.json corrupt, restoring", "task", id, "from", restoredFrom, "reason", restoreWhy)
	}
	l, err := listJournal(d.ws, id)
	if err != nil {
		return nil, err
	}
	// Leftovers of writes cut short, and spares: the task starts afresh.
	d.dropSpares(id)
	for _, t := range l.temps {
		_ = d.ws.Root().Remove(path.Join(journalPath(id), t))
	}
	d.removeStateTemps(id)
	c.next = max(l.maxSeq, c.st.JournalSeq) + 1
	read, err := d.settleLeftovers(id, &l)
	if err != nil {
		return nil, err
	}
	var recs []workspace.JournalRecord
	for _, seq := range l.seqsAfter(0) {
		t, isTaken := l.taken[seq]
		if seq <= c.st.JournalSeq && !isTaken {
			continue
		}
		var rec workspace.JournalRecord
		if isTaken {
			// Crashed between taking the marker and writing its record.
			rec, err = d.finishTaken(id, t)
		} else {
			name := l.records[seq]
			rs, ok := read[name]
			if !ok {
				if rs, err = readRecordFile(d.ws, id, l.files[name]); err == nil {
					read[name] = rs
				}
			}
			if err == nil {
				rec = rs[seq-l.files[name].seq]
			}
		}
		if err != nil {
			d.log.Error("journal record unreadable, skipped", "task", id, "seq", seq, "err", err)
			continue
		}
		if seq > c.st.JournalSeq {
			recs = append(recs, rec)
		}
	}
	if len(recs) > 0 || write {
		if err := d.commit(id, c, recs, backupOld, restoredFrom, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// settleLeftovers deals with the record files that still have taken
// markers beside them (written, maybe not made durable: see settle). A
// file that reads back whole is made durable and its taken markers
// removed; one that does not is removed, and its records are written again
// from their taken markers by the caller. l is updated to match; the
// files read are returned by name, with their records.
func (d *Daemon) settleLeftovers(id string, l *journalListing) (map[string][]workspace.JournalRecord, error) {
	read := map[string][]workspace.JournalRecord{}
	bad := map[string]bool{}
	var settled []int64
	for seq := range l.taken {
		name, ok := l.records[seq]
		if !ok || bad[name] {
			continue
		}
		if _, ok := read[name]; !ok {
			rs, err := readRecordFile(d.ws, id, l.files[name])
			if err != nil {
				d.log.Warn("journal record file torn; writing its records again from the taken markers", "task", id, "file", name, "err", err)
				_ = d.ws.Root().Remove(path.Join(journalPath(id), name))
				bad[name] = true
				continue
			}
			read[name] = rs
		}
		settled = append(settled, seq)
	}
	for name := range bad {
		e := l.files[name]
		for s := e.seq; s <= e.last; s++ {
			if l.records[s] == name {
				delete(l.records, s)
			}
		}
		delete(l.files, name)
	}
	var keep []int64
	for _, seq := range settled {
		if !bad[l.records[seq]] {
			keep = append(keep, seq)
		}
	}
	if len(keep) == 0 {
		return read, nil
	}
	files := make([]string, 0, len(read))
	for name := range read {
		files = append(files, name)
	}
	if err := d.syncRecords(id, files); err != nil {
		return nil, err
	}
	taken := make([]string, len(keep))
	for i, seq := range keep {
		taken[i] = l.taken[seq].name
		delete(l.taken, seq)
	}
	d.removeTaken(id, taken, never)
	return read, nil
}

// finishTaken writes the record of a marker taken before a crash: it is
// judged as it is (no grace: it is already taken) and stamped now.
func (d *Daemon) finishTaken(id string, t journalEntry) (workspace.JournalRecord, error) {
	rel := path.Join(journalPath(id), t.name)
	fi, err := d.ws.Root().Lstat(rel)
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	kind, _ := workspace.IsMarkerName(t.marker)
	td, err := d.ws.Root().OpenRoot(workspace.TaskDir(id))
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	defer td.Close()
	jr, err := td.OpenRoot(JournalDir)
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	defer jr.Close()
	tdf, err := td.Open(".")
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	defer tdf.Close()
	jrf, err := jr.Open(".")
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	defer jrf.Close()
	ex := examine(d.ws, tdf, jrf, t.name, kind, fi, d.now(), -1)
	rec := ex.record(t.seq, d.now(), t.marker)
	if _, err := d.writeRecords(jr, id, []workspace.JournalRecord{rec}, true); err != nil {
		return workspace.JournalRecord{}, err
	}
	d.removeTaken(id, []string{t.name}, never)
	return rec, nil
}

// pendingMarker is one marker of the task directory, with its Lstat.
type pendingMarker struct {
	name string
	kind string
	fi   fs.FileInfo
}

// chunk is the most markers of one burst applied in one state write. A
// larger burst is committed chunk by chunk, in order, so the first markers
// of a burst are not kept waiting for the last ones to be examined and
// journaled; each chunk still costs a fixed number of fsyncs.
const chunk = 32

// maxLists bounds how many times one call of takeMarkers lists the task
// directory again for markers dropped while it worked, so that a task
// receiving a steady stream of markers does not keep the loop from the
// other tasks.
const maxLists = 16

// batch is the markers of one chunk, read and judged, in the order they
// will be taken.
type batch struct {
	pending []pendingMarker
	exs     []examined
}

// lister lists the markers of a task directory in the order they were
// dropped, and remembers the ones listed but not yet examined.
type lister struct {
	td    *os.Root
	tdf   *os.File        // td, open, for reading markers by name
	rest  []pendingMarker // listed, not yet in a batch
	lists int
	err   error
}

// list reads the task directory again (when the markers listed before are
// running out), keeping the markers in drop order: mtime, then name.
func (l *lister) list() {
	if len(l.rest) >= chunk || l.lists >= maxLists || l.err != nil {
		return
	}
	l.lists++
	names, err := markerNamesIn(l.td)
	if err != nil {
		l.err = err
		return
	}
	l.rest = l.rest[:0]
	for _, n := range names {
		fi, err := l.td.Lstat(n)
		if err != nil {
			continue
		}
		kind, _ := workspace.IsMarkerName(n)
		l.rest = append(l.rest, pendingMarker{name: n, kind: kind, fi: fi})
	}
	sort.Slice(l.rest, func(i, j int) bool {
		a, b := l.rest[i].fi.ModTime(), l.rest[j].fi.ModTime()
		if !a.Equal(b) {
			return a.Before(b)
		}
		return l.rest[i].name < l.rest[j].name
	})
}

// next lists if needed and examines the next chunk of markers.
func (l *lister) next(d *Daemon) batch {
	l.list()
	n := min(len(l.rest), chunk)
	b := batch{pending: slices.Clone(l.rest[:n])}
	l.rest = slices.Delete(l.rest, 0, n)
	b.exs = d.examineAll(l.tdf, b.pending)
	return b
}

// stragglers adds to b the markers dropped since it was listed, when b has
// room and nothing listed before them is waiting: they are examined now
// and taken with it rather than costing a chunk of their own.
func (l *lister) stragglers(d *Daemon, b batch) batch {
	if len(b.pending) >= chunk || len(l.rest) > 0 || l.lists >= maxLists || l.err != nil {
		return b
	}
	seen := make(map[string]bool, len(b.pending))
	for _, p := range b.pending {
		seen[p.name] = true
	}
	l.list()
	var add []pendingMarker
	keep := l.rest[:0]
	for _, p := range l.rest {
		switch {
		case seen[p.name]:
		case len(b.pending)+len(add) < chunk:
			add = append(add, p)
		default:
			keep = append(keep, p)
		}
	}
	l.rest = keep
	if len(add) == 0 {
		return b
	}
	b.pending = append(b.pending, add...)
	b.exs = append(b.exs, d.examineAll(l.tdf, add)...)
	return b
}

// examineAll reads and judges markers of the task directory td, several
// at once (the work is independent; the renames that take them stay in
// order). A few workers share the markers, rather than a goroutine each,
// so that the deep stack of a schema check is grown once per worker.
func (d *Daemon) examineAll(td *os.File, pending []pendingMarker) []examined {
	now := d.now()
	exs := make([]examined, len(pending))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	// One worker a processor: markers and products are read from the page
	// cache, just written, so more workers would only add switching
	// (rounds of 32 markers alternating 2 workers and 8 on 2 cores: 0.8 ms
	// less a round on average over 80 pairs).
	for range min(runtime.GOMAXPROCS(0), len(pending)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pending) {
					return
				}
				p := pending[i]
				exs[i] = examine(d.ws, td, td, p.name, p.kind, p.fi, now, d.cfg.Grace)
			}
		})
	}
	wg.Wait()
	return exs
}

// takeMarkers journals every marker of the task directory that is ready
// (valid, or rejected) and applies them, up to chunk markers per state
// write. Markers are taken in the order they were dropped (mtime, then
// name), so of two claims the earlier one wins. While one chunk is being
// made durable, the next is read and examined beside it, and markers
// dropped meanwhile join it. It returns how many were taken and, when
// some wait for their grace period, until when.
func (d *Daemon) takeMarkers(ctx context.Context, id string, c *taskCache) (int, time.Time, error) {
	// Handles on the task directory and on its journal, as roots and as
	// open directories: every operation below then resolves one name,
	// not the whole path.
	td, err := d.ws.Root().OpenRoot(workspace.TaskDir(id))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("open task %s: %w", id, err)
	}
	defer td.Close()
	tdf, err := td.Open(".")
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("open task %s: %w", id, err)
	}
	defer tdf.Close()
	ls := &lister{td: td, tdf: tdf}
	ls.list()
	if ls.err != nil {
		return 0, time.Time{}, fmt.Errorf("list markers of task %s: %w", id, ls.err)
	}
	if len(ls.rest) == 0 {
		return 0, time.Time{}, nil
	}
	if err := atomicfile.MkdirAll(td, JournalDir, d.ws.DirPerm()); err != nil {
		return 0, time.Time{}, fmt.Errorf("create journal of task %s: %w", id, err)
	}
	jr, err := td.OpenRoot(JournalDir)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("open journal of task %s: %w", id, err)
	}
	defer jr.Close()
	jrf, err := jr.Open(".")
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("open journal of task %s: %w", id, err)
	}
	defer jrf.Close()
	var (
		total    int
		waitTill time.Time
	)
	b := ls.next(d)
	for len(b.pending) > 0 && ctx.Err() == nil {
		recs, taken, wt, err := d.takeBatch(id, c, taskDirs{jr: jr, tdf: tdf, jrf: jrf}, b)
		if !wt.IsZero() && (waitTill.IsZero() || wt.Before(waitTill)) {
			waitTill = wt
		}
		if err != nil {
			return total, waitTill, err
		}
		// Read and examine the next chunk while this one is made durable.
		ahead := make(chan batch, 1)
		go func() { ahead <- ls.next(d) }()
		if len(recs) > 0 {
			err = d.commitBatch(id, c, jr, recs, taken)
		}
		b = <-ahead
		if err != nil {
			return total, waitTill, err
		}
		total += len(recs)
		if len(recs) == 0 && len(ls.rest) == 0 {
			// Only markers waiting for their grace period: listing
			// again would find the same ones.
			break
		}
		b = ls.stragglers(d, b)
	}
	if total > 0 && ctx.Err() == nil && !vocab.Finished(c.st.Status) {
		// The burst is taken and its state written: ready the next one.
		d.fillSpares(id)
	}
	return total, waitTill, ctx.Err()
}

// taskDirs are a task directory and its journal, open (for reads and
// renames of single names), and the journal as a root (for look-ups).
type taskDirs struct {
	jr       *os.Root
	tdf, jrf *os.File
}

// renameAt renames oldName in the open directory from to newName in the
// open directory to: one renameat(2), both names single components, so
// nothing outside the two directories can be reached.
func renameAt(from *os.File, oldName string, to *os.File, newName string) error {
	err := unix.Renameat(int(from.Fd()), oldName, int(to.Fd()), newName)
	runtime.KeepAlive(from)
	runtime.KeepAlive(to)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: err}
	}
	return nil
}

// takeBatch takes the ready markers of b into the journal, in order, each
// with the next sequence number, through dirs. It returns their records,
// the names they were taken as, and when the earliest marker left waiting
// passes its grace period.
func (d *Daemon) takeBatch(id string, c *taskCache, dirs taskDirs, b batch) ([]workspace.JournalRecord, []string, time.Time, error) {
	now := d.now()
	var waitTill time.Time
	// Sequence numbers go to the ready markers in order, and the renames
	// happen in that order too, one after another: a crash between two
	// renames then leaves a prefix of the chunk taken and the rest still in
	// the task directory, so sequence numbers stay contiguous and follow
	// the order the markers were dropped in.
	var (
		recs  []workspace.JournalRecord
		taken []string
	)
	for i, p := range b.pending {
		ex := b.exs[i]
		switch ex.verdict {
		case vanished:
			continue
		case wait:
			until := p.fi.ModTime().Add(d.cfg.Grace)
			if waitTill.IsZero() || until.Before(waitTill) {
				waitTill = until
			}
			continue
		}
		seq := c.next
		tn := takenName(seq, p.name)
		// The commit point: the marker leaves the task directory and
		// enters the journal in one rename.
		if err := renameAt(dirs.tdf, p.name, dirs.jrf, tn); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				// Some markers may be taken: reload the task from disk
				// next time, which finishes their records.
				d.forget(id)
				return nil, nil, waitTill, fmt.Errorf("take marker %s: %w", markerPath(id, p.name), err)
			}
			// Removed by someone else since it was read: its number is
			// used up, so say why in the record.
			ex.verdict, ex.reason = reject, "marker vanished before it was taken"
			tn = ""
		} else if fi, err := dirs.jr.Lstat(tn); err == nil && !sameFile(p.fi, fi) {
			// The file was swapped between reading and renaming: judge
			// what was actually taken.
			ex = examine(d.ws, dirs.tdf, dirs.jrf, tn, p.kind, fi, now, -1)
		}
		c.next++
		recs = append(recs, ex.record(seq, now, p.name))
		if tn != "" {
			taken = append(taken, tn)
		}
	}
	return recs, taken, waitTill, nil
}

// commitBatch makes the taking of recs durable, writes their records and
// applies them in one state write. taken names the taken markers in the
// journal.
func (d *Daemon) commitBatch(id string, c *taskCache, jr *os.Root, recs []workspace.JournalRecord, taken []string) error {
	// The renames are the commit point: make them durable, then write the
	// records, beside the work of applying them; the state that reflects
	// them waits for both. The taken markers (written durably by their
	// agents) are the journal's durable copy until settle has made the
	// records durable too.
	journaled := make(chan error, 1)
	go func() {
		if err := atomicfile.SyncDir(jr, "."); err != nil {
			journaled <- fmt.Errorf("sync journal of task %s: %w", id, err)
			return
		}
		file, err := d.writeRecords(jr, id, recs, false)
		if err == nil {
			d.mu.Lock()
			u := d.unsettledOf(id)
			u.files, u.taken = append(u.files, file), append(u.taken, taken...)
			d.mu.Unlock()
		}
		journaled <- err
	}()
	wait := sync.OnceValue(func() error { return <-journaled })
	err := d.commit(id, c, recs, c.fi != nil, "", wait)
	if jerr := wait(); jerr != nil {
		d.forget(id)
		return jerr
	}
	if err != nil {
		// The records are journaled but not applied: reload the task from
		// disk next time, which replays them past state.json's journal_seq.
		d.forget(id)
		return err
	}
	return nil
}

// settle makes the records of a task's recent bursts durable (each
// fsynced, then the journal directory) and then removes the taken markers
// they came from. Until then a crash that loses a record's data (power
// loss) is repaired on start from the taken marker beside it. Keeping the
// fsync of every record off the hot path is what lets a burst cost a
// fixed number of fsyncs, whatever its size.
//
// It takes no task lock, so it never delays the taking of new markers:
// it only touches records already in place and the taken markers of
// those records, which nothing else changes (a load that finds such a
// pair does the same: sync, then remove the taken marker).
//
// It also settles the backups of state.json the bursts added: backups/
// is fsynced, and pruned to backups.keep. A new state.json is durable on
// its own, and a backup lost to a crash before this costs only an older
// version, which the journal can replay past.
//
// Removing files is the part that can wait, and the part that disturbs a
// burst: on a filesystem mounted with discard an unlink waits for the
// device (a couple of milliseconds a file here), and the fsyncs of a
// burst queue behind it. So unless force is set, the taken markers are
// removed and backups/ pruned only while the daemon is quiet (it has not
// set about taking markers for settleQuiet), and the removal stops as
// soon as it does, leaving the rest for a later settle. A task with a
// backlog of settleBacklog taken markers has the oldest removed, down to
// half of that, whatever the traffic.
func (d *Daemon) settle(id string, force bool) error {
	since := d.busy.Load()
	d.mu.Lock()
	u := d.unsettled[id]
	delete(d.unsettled, id)
	d.mu.Unlock()
	if u == nil {
		return nil
	}
	if len(u.files) > 0 {
		if err := d.syncRecords(id, u.files); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // the task was removed meanwhile
			}
			d.requeue(id, u)
			return err
		}
	}
	bs := d.backups(id)
	if u.backups {
		if err := bs.Sync(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.requeue(id, &unsettled{taken: u.taken, backups: true, pruned: u.pruned})
			return err
		}
	}
	busy := func() bool {
		return !force && (d.busy.Load() != since || d.sinceBusy() < settleQuiet)
	}
	// The records of every name in u.taken are durable now. Past the
	// backlog, the oldest are removed down to half of it whatever the
	// traffic; the rest, like the pruning, wait for a quiet moment.
	forced := 0
	if len(u.taken) >= d.backlog {
		forced = len(u.taken) - d.backlog/2
	}
	d.removeTaken(id, u.taken[:forced], never)
	left := &unsettled{taken: d.removeTaken(id, u.taken[forced:], busy), pruned: u.pruned}
	if u.pruned && len(left.taken) == 0 {
		done, err := bs.Prune(busy)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.requeue(id, left)
			return err
		}
		left.pruned = !done
	}
	if len(left.taken) > 0 || left.pruned {
		d.requeue(id, left)
	}
	return nil
}

// requeue hands work of settle back, for the next settle of task id.
func (d *Daemon) requeue(id string, u *unsettled) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.unsettledOf(id)
	v.files, v.taken = append(u.files, v.files...), append(u.taken, v.taken...)
	v.backups, v.pruned = v.backups || u.backups, v.pruned || u.pruned
}

// pendingSettle lists the tasks settle has work left for.
func (d *Daemon) pendingSettle() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.unsettled))
	for id := range d.unsettled {
		ids = append(ids, id)
	}
	return ids
}

// unsettled is what settle has left to do for a task.
type unsettled struct {
	files   []string // record files written but not yet fsynced
	taken   []string // taken markers, each with its record in files or already durable
	backups bool     // backups/ has links not yet fsynced
	pruned  bool     // backups/ may hold more than backups.keep
}

// unsettledOf returns the settle work of task id, adding it if missing.
// The caller holds d.mu.
func (d *Daemon) unsettledOf(id string) *unsettled {
	u := d.unsettled[id]
	if u == nil {
		u = &unsettled{}
		d.unsettled[id] = u
	}
	return u
}

// never is a stop function that never stops.
func never() bool { return false }

// sinceBusy is how long ago the daemon last set about taking markers.
func (d *Daemon) sinceBusy() time.Duration {
	return time.Since(d.started) - time.Duration(d.lastBusy.Load())
}

// busyNow notes that the daemon is setting about taking markers.
func (d *Daemon) busyNow() {
	d.lastBusy.Store(int64(time.Since(d.started)))
	d.busy.Add(1)
}

// syncRecords makes the given record files of a task durable: one
// syncfs(2) of the workspace's filesystem (one journal commit for every
// record of the burst, instead of an fsync each, which would keep the
// filesystem committing and stall every other write), then an fsync of
// the journal directory. Where syncfs is not available the files are
// fsynced one by one.
func (d *Daemon) syncRecords(id string, files []string) error {
	if err := syncFS(d.ws.Root()); err != nil {
		for _, name := range files {
			f, err := d.ws.Root().Open(path.Join(journalPath(id), name))
			if err != nil {
				return fmt.Errorf("sync journal of task %s: %w", id, err)
			}
			err = f.Sync()
			f.Close()
			if err != nil {
				return fmt.Errorf("sync journal of task %s: %w", id, err)
			}
		}
	}
	return atomicfile.SyncDir(d.ws.Root(), journalPath(id))
}

// writeRecords writes the records of one chunk (consecutive seqs, in
// order) atomically in one file: RecordName for one record, BatchName for
// more (a temporary dot-file renamed into place, so a reader never sees a
// torn file). durable writes it with atomicfile (fsync of the file and of
// the directory); otherwise it is only renamed into place and settle makes
// it durable later, the taken markers beside it being the durable copy
// meanwhile. A record that does not match the journal schema (it cannot
// happen for a marker that passed its own schema) is written as a
// rejection. It returns the file's name.
func (d *Daemon) writeRecords(jr *os.Root, id string, recs []workspace.JournalRecord, durable bool) (string, error) {
	for i := range recs {
		if err := checkRecord(&recs[i]); err != nil {
			return "", fmt.Errorf("encode journal record %d of task %s: %w", recs[i].Seq, id, err)
		}
	}
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
		err = atomicfile.WriteFile(jr, name, data, d.ws.FilePerm())
	} else {
		// Deliberately not fsynced here: see settle.
		if !d.writeSpareRecord(id, name, data) {
			tmp := ".tmp-" + name
			if err = jr.WriteFile(tmp, data, d.ws.FilePerm()); err == nil {
				err = jr.Rename(tmp, name)
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("write journal %s of task %s: %w", name, id, err)
	}
	return name, nil
}

// checkRecord makes sure rec matches the journal schema. A taken marker
// passed its own schema, which the journal's repeats: only a record
// carrying more (a plan, a review) or a rejected marker is checked again,
// and one that fails is turned into a rejection saying why.
func checkRecord(rec *workspace.JournalRecord) error {
	if rec.Plan == nil && rec.Review == nil && rec.Rejected == "" {
		return nil
	}
	data, err := atomicfile.Marshal(rec)
	if err != nil {
		return err
	}
	if verr := schemas.Validate(schemas.KindJournal, data); verr != nil {
		rec.Plan, rec.Review = nil, nil
		rec.Rejected = "record does not match the journal schema: " + verr.Error()
	}
	return nil
}

// removeTaken removes taken marker files whose records are durable, in
// order, until stop says to stop; it returns the names it left. A failure
// is harmless: the next load removes them.
func (d *Daemon) removeTaken(id string, names []string, stop func() bool) []string {
	for i, n := range names {
		if stop() {
			return names[i:]
		}
		rel := path.Join(journalPath(id), n)
		if err := d.ws.Root().Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = d.ws.Root().RemoveAll(rel) // a directory named like a marker
		}
	}
	return nil
}

// commit folds recs into the cached state and writes state.json once
// (group commit), backing up the previous one first when it is valid;
// then it appends the events to events.log and shows them to the friction
// detectors. restoredFrom, when set, says state.json was corrupt and
// where the state came from: one state_restored event stands for the
// replay. before, if set, is waited for (and its error returned) once the
// new state is computed and checked, before anything is written: the
// work that must be durable before the state reflects it.
func (d *Daemon) commit(id string, c *taskCache, recs []workspace.JournalRecord, backupOld bool, restoredFrom string, before func() error) error {
	st, evs, err := machine.Continue(c.st, d.planLoader(id, c), recs)
	if err != nil {
		d.log.Error("apply journal", "task", id, "err", err)
	}
	delta := diffState(c.st, st)
	check := checkNext(c.valid, st, delta)
	data, frags, merr := encodeState(st, c.frags, delta)
	if merr != nil {
		return fmt.Errorf("encode state of task %s: %w", id, merr)
	}
	if verr := check(data); verr != nil {
		return fmt.Errorf("state of task %s would not validate, not written: %w", id, verr)
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	if backupOld {
		// Linked only: settle prunes backups/ and makes it durable.
		if _, err := d.backups(id).Add(statePath(id)); err != nil {
			return err
		}
		d.mu.Lock()
		u := d.unsettledOf(id)
		u.backups, u.pruned = true, true
		d.mu.Unlock()
	}
	if err := d.writeState(id, data); err != nil {
		return fmt.Errorf("write state of task %s: %w", id, err)
	}
	c.fi, _ = d.ws.Root().Lstat(statePath(id))
	c.st, c.valid, c.frags = st, true, frags
	for _, r := range recs {
		if r.Plan != nil && r.Plan.ID == st.PlanID && r.Plan.Version == st.PlanVersion {
			c.plan = r.Plan
		}
	}
	d.noteProgress(id, st, c.plan)
	if restoredFrom != "" {
		evs = []workspace.Event{{Time: d.now().UTC(), Name: EventStateRestored, TaskID: id,
			Attrs: map[string]string{"from": restoredFrom, "journal_seq": fmt.Sprint(st.JournalSeq)}}}
	}
	if len(evs) > 0 {
		if err := d.ws.AppendEvents(id, evs); err != nil {
			d.log.Warn("append events", "task", id, "err", err)
		}
		d.observe(evs)
	}
	if d.cfg.OnCommit != nil {
		d.cfg.OnCommit(id, st)
	}
	d.log.Debug("state written", "task", id, "journal_seq", st.JournalSeq, "records", len(recs))
	return err
}

// checkNext checks next against the state schema before it is written:
// it starts the check and returns the function that finishes it, given
// next encoded. When the state next was derived from is known valid
// (prevValid) only what changed (delta) is validated, beside the encoding:
// the schema puts no constraint across the entries of subtasks,
// checkpoints and workers, so the entries equal to the previous state's
// are valid already, and the document is checked with the others left
// out. The size limit still applies to it whole; the depth limit need
// not be checked again, as every entry sits at the same depth in the
// part as in the whole and was checked there once. A burst on a task
// with hundreds of subtasks so costs what it changes, not the size of
// the state.
func checkNext(prevValid bool, next workspace.State, delta stateDelta) func(data []byte) error {
	if !prevValid {
		return func(data []byte) error { return schemas.Validate(schemas.KindState, data) }
	}
	part := next
	part.Subtasks, part.Checkpoints, part.Workers = delta.subtasks, delta.checkpoints, delta.workers
	checked := make(chan error, 1) // never blocks: the result may go unread
	go func() {
		pdata, err := json.Marshal(part)
		if err == nil {
			err = schemas.Validate(schemas.KindState, pdata)
		}
		checked <- err
	}()
	return func(data []byte) error {
		if err := <-checked; err != nil {
			return err
		}
		if len(data) > schemas.MaxBytes {
			return fmt.Errorf("%s: %w: %d bytes, limit %d", schemas.KindState, schemas.ErrTooLarge, len(data), schemas.MaxBytes)
		}
		return nil
	}
}

// planLoader gives machine.Continue the plan the state tracks when no
// record in the batch carries it: the cached one, else plan.json or
// plans/plan_v<N>.json, else the journal record that proposed it.
func (d *Daemon) planLoader(id string, c *taskCache) func(int) (*workspace.Plan, error) {
	return func(version int) (*workspace.Plan, error) {
		if c.plan != nil && c.plan.Version == version && c.plan.ID == c.st.PlanID {
			return c.plan, nil
		}
		return loadPlan(d.ws, id, c.st.PlanID, version)
	}
}

// loadPlan finds plan planID version of a task: plan.json or
// plans/plan_v<N>.json when it is that plan, else the newest journal
// record that carries it.
func loadPlan(ws *workspace.Workspace, id, planID string, version int) (*workspace.Plan, error) {
	if p, err := ws.ReadPlan(id, version); err == nil && p.ID == planID && p.Version == version {
		return p, nil
	}
	recs, err := ReadJournal(ws, id)
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

// frictionEvents are the events the friction detectors read.
var frictionEvents = map[string]bool{
	friction.EventPlanRevisionNeeded: true, friction.EventCheckpointRevisionNeeded: true,
	friction.EventReviewIssues: true, friction.EventWorkFailed: true,
	friction.EventOutputRejected: true, friction.EventEscalated: true,
}

// observe shows the events that matter to the friction log.
func (d *Daemon) observe(evs []workspace.Event) {
	var obs []friction.Observation
	for _, e := range evs {
		if frictionEvents[e.Name] {
			obs = append(obs, friction.Observation{At: e.Time, TaskID: e.TaskID, Event: e.Name, Args: e.Args, Attrs: e.Attrs})
		}
	}
	if len(obs) == 0 {
		return
	}
	since := d.now().UTC().Truncate(time.Millisecond)
	entries, err := d.friction.Observe(d.ctx, obs, d.frictionCfg)
	if err != nil {
		d.log.Warn("record friction", "err", err)
	}
	tasks := map[string]bool{}
	for _, o := range obs {
		tasks[o.TaskID] = true
	}
	d.noteFriction(entries, since, tasks)
}
