package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// Taking: the markers of a task directory are listed in the order they
// were dropped, read and judged (marker.go), and the ready ones renamed
// into the journal, each under its sequence number. The rename is the
// commit point of a marker: from then on it is applied exactly once.

// chunk is the most markers of one burst journaled together. A larger
// burst is journaled chunk by chunk, in order, so the first markers of a
// burst are not kept waiting for the last ones to be examined; each chunk
// costs one fsync of the journal, and the state is written once for them
// all (see take).
const chunk = 32

// maxLists bounds how many times one take lists the task directory again
// for markers dropped while it worked, so that a task receiving a steady
// stream of markers does not keep the loop from the other tasks.
const maxLists = 16

// take journals the markers of the task directory that are ready (valid,
// or rejected), up to max, and commits them. Markers are taken in the order they were
// dropped (mtime, then name), so of two claims the earlier one wins. They
// are taken chunk by chunk: each chunk is renamed into the journal, made
// durable there and folded into the state, and while that is done the
// next chunk is read and examined beside it. The state is written once
// no marker is left or max are taken: during a burst, the markers that
// arrive while a chunk is journaled are taken next rather than waiting
// for a state write of their own. It returns how many were taken, whether
// more are waiting past max, and, when some wait for their grace period,
// until when.
func (t *committer) take(ctx context.Context, max int) (int, bool, time.Time, error) {
	dirs := *t.open
	ls := &lister{td: dirs.td, dir: dirs.tdf}
	first := ls.next()
	if ls.err != nil {
		return 0, false, time.Time{}, fmt.Errorf("list markers of task %s: %w", t.id, ls.err)
	}
	var (
		total    int
		waitTill time.Time
		next     nextState // the markers journaled and folded since the last write
		folded   int       // how many
	)
	b := t.examine(dirs, first)
	for len(b.pending) > 0 && ctx.Err() == nil {
		recs, taken, wt, err := t.takeChunk(ctx, dirs, b)
		if !wt.IsZero() && (waitTill.IsZero() || wt.Before(waitTill)) {
			waitTill = wt
		}
		if err != nil {
			return total, false, waitTill, err
		}
		// Read and examine the next chunk while this one is journaled.
		ahead := make(chan batch, 1)
		go func() { ahead <- t.examine(dirs, ls.next()) }()
		if len(recs) > 0 {
			if folded == 0 {
				next = t.unwritten()
			}
			err = t.journal(dirs, recs, taken, &next)
			folded += len(recs)
		}
		b = <-ahead
		if err != nil {
			return total, false, waitTill, err
		}
		total += len(recs)
		if len(recs) == 0 && len(ls.rest) == 0 {
			// Only markers waiting for their grace period: listing
			// again would find the same ones.
			break
		}
		if total >= max {
			// Enough for one state write: the daemon commits again for
			// the rest.
			break
		}
		b = t.examineMore(dirs, b, ls.stragglers(b))
		if folded > 0 && (len(b.pending) == 0 || next.stopped != nil) {
			if err := t.commit(ctx, next); err != nil {
				return total, false, waitTill, err
			}
			folded = 0
		}
	}
	if folded > 0 {
		if err := t.commit(ctx, next); err != nil {
			return total, false, waitTill, err
		}
	}
	return total, total >= max, waitTill, ctx.Err()
}

// taskDirs are a task directory and its journal, open as roots (for
// look-ups) and as directories (for reads, writes, renames and fsyncs of
// single names): every operation then resolves one name, not the whole
// path. The directories are opened O_NONBLOCK, which a directory ignores,
// so that the runtime does not set and clear the flag (four fcntl(2)) to
// try its poller, which never takes a directory.
type taskDirs struct {
	td, jr   *os.Root
	tdf, jrf *os.File
	own      bool // close closes td too
}

// openTaskDirs opens a task directory and its journal, making the journal
// when it is missing.
func openTaskDirs(ws *Store, id string) (taskDirs, error) {
	td, err := ws.Root().OpenRoot(workspace.TaskDir(id))
	if err != nil {
		return taskDirs{}, fmt.Errorf("open task %s: %w", id, err)
	}
	dirs, err := openTaskDirsIn(ws, td, id)
	dirs.own = true
	if err != nil {
		td.Close()
	}
	return dirs, err
}

// openTaskDirsIn is openTaskDirs of td, the task directory open already,
// which it leaves open when it fails and close leaves to its caller.
func openTaskDirsIn(ws *Store, td *os.Root, id string) (dirs taskDirs, err error) {
	dirs.td = td
	defer func() {
		if err != nil {
			dirs.td = nil
			dirs.close()
			err = fmt.Errorf("open task %s: %w", id, err)
		}
	}()
	if dirs.tdf, err = openDir(dirs.td); err != nil {
		return dirs, err
	}
	if err = atomicfile.MkdirAll(dirs.td, JournalDir, ws.DirPerm()); err != nil {
		return dirs, err
	}
	if dirs.jr, err = dirs.td.OpenRoot(JournalDir); err != nil {
		return dirs, err
	}
	dirs.jrf, err = openDir(dirs.jr)
	return dirs, err
}

// openDir opens r's directory for reading and fsyncing (see taskDirs).
func openDir(r *os.Root) (*os.File, error) {
	return r.OpenFile(".", os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func (dirs taskDirs) close() {
	for _, f := range []*os.File{dirs.tdf, dirs.jrf} {
		if f != nil {
			f.Close()
		}
	}
	for _, r := range []*os.Root{dirs.td, dirs.jr} {
		if r != nil && (r != dirs.td || dirs.own) {
			r.Close()
		}
	}
}

// pendingMarker is one marker of the task directory, with its Lstat.
type pendingMarker struct {
	name string
	kind string
	fi   fs.FileInfo
}

// batch is the markers of one chunk, read and judged, in the order they
// will be taken.
type batch struct {
	pending []pendingMarker
	exs     []examined
}

// lister lists the markers of a task directory in the order they were
// dropped, and remembers the ones listed but not yet in a chunk.
type lister struct {
	td *os.Root
	// dir, when set, is td open, read again from its start at each list
	// rather than opened anew.
	dir   *os.File
	rest  []pendingMarker // listed, not yet in a chunk
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
	names, err := l.names()
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

// names reads the marker names of the task directory.
func (l *lister) names() ([]string, error) {
	if l.dir != nil {
		if _, err := l.dir.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return readMarkerNames(l.dir)
	}
	f, err := l.td.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMarkerNames(f)
}

// next lists if needed and returns the next chunk of markers.
func (l *lister) next() []pendingMarker {
	l.list()
	n := min(len(l.rest), chunk)
	out := slices.Clone(l.rest[:n])
	l.rest = slices.Delete(l.rest, 0, n)
	return out
}

// stragglers returns the markers dropped since b was listed, when b has
// room and nothing listed before them is waiting, up to b's room: they
// are taken with it rather than costing a chunk of their own.
func (l *lister) stragglers(b batch) []pendingMarker {
	if len(b.pending) >= chunk || len(l.rest) > 0 || l.lists >= maxLists || l.err != nil {
		return nil
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
	return add
}

// examine reads and judges the markers of a chunk.
func (t *committer) examine(dirs taskDirs, pending []pendingMarker) batch {
	return batch{pending: pending, exs: t.examineAll(dirs.tdf, pending)}
}

// examineMore adds markers to b, read and judged.
func (t *committer) examineMore(dirs taskDirs, b batch, more []pendingMarker) batch {
	if len(more) == 0 {
		return b
	}
	b.pending = append(b.pending, more...)
	b.exs = append(b.exs, t.examineAll(dirs.tdf, more)...)
	return b
}

// examineAll reads and judges markers of the task directory td, several
// at once (the work is independent; the renames that take them stay in
// order). One worker a processor shares the markers, rather than a
// goroutine each, so that the deep stack of a schema check is grown once
// per worker; markers and products are read from the page cache, just
// written, so more workers would only add switching.
func (t *committer) examineAll(td *os.File, pending []pendingMarker) []examined {
	s := t.s
	now := s.Now()
	exs := make([]examined, len(pending))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(pending) {
				return
			}
			p := pending[i]
			exs[i] = examine(s, td, td, p.name, p.name, p.kind, p.fi, now, s.grace())
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(pending))
	if workers == 1 {
		// A lone marker is examined by the committer itself, whose stack
		// its own checks grow anyway.
		work()
		return exs
	}
	for range workers {
		wg.Go(work)
	}
	wg.Wait()
	return exs
}

// takeChunk renames the ready markers of b into the journal, in order,
// each with the next sequence number. It returns their records, the names
// they were taken as, and when the earliest marker left waiting passes its
// grace period.
func (t *committer) takeChunk(ctx context.Context, dirs taskDirs, b batch) ([]workspace.JournalRecord, []string, time.Time, error) {
	s := t.s
	now := s.Now()
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
		if ex.verdict == vanished {
			continue
		}
		if seq, dup, err := t.journaledAs(p.name); err != nil {
			t.forget()
			return nil, nil, waitTill, fmt.Errorf("marker names of task %s: %w", t.id, err)
		} else if dup {
			t.refuseReused(ctx, dirs, p, ex, seq)
			continue
		}
		if ex.verdict == wait {
			until := p.fi.ModTime().Add(s.grace())
			if waitTill.IsZero() || until.Before(waitTill) {
				waitTill = until
			}
			continue
		}
		seq := t.next
		tn := takenName(seq, p.name)
		// The commit point: the marker leaves the task directory and
		// enters the journal in one rename.
		if err := renameAt(dirs.tdf, p.name, dirs.jrf, tn); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				// Some markers may be taken: reload the task from disk
				// next time, which finishes their records.
				t.forget()
				return nil, nil, waitTill, fmt.Errorf("take marker %s: %w", markerPath(t.id, p.name), err)
			}
			// Removed by someone else since it was read: its number is
			// used up, so say why in the record.
			ex.verdict, ex.judged = reject, ex.judged.Reject("marker vanished before it was taken")
			tn = ""
		} else if fi, err := dirs.jr.Lstat(tn); err == nil && !sameFile(p.fi, fi) {
			// The file was swapped between reading and renaming: judge
			// what was actually taken.
			ex = examine(s, dirs.tdf, dirs.jrf, tn, p.name, p.kind, fi, now, -1)
		}
		t.next++
		recs = append(recs, ex.record(seq, now))
		t.noteJournaled(p.name, seq)
		t.noteTaken(recs[len(recs)-1], p.fi.ModTime())
		if tn != "" {
			taken = append(taken, tn)
		}
	}
	return recs, taken, waitTill, nil
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

// createAt creates name in the open directory dir (or truncates it: a
// temporary file a crash left), writes data and closes it, with no fsync;
// a symlink in its place is refused (O_NOFOLLOW).
func createAt(dir *os.File, name string, data []byte, perm os.FileMode) error {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(dir)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
