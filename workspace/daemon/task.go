package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// task is everything the daemon knows about one task, and the one place
// it is kept: the loop holds a map of them by task id and nothing else is
// keyed by task id. A marker's way through the daemon reads in one line:
// the loop notes the event (loop.go), hands the task to process, which
// loads it (recover.go), takes its markers (take.go) and commits them
// through the state machine (commit.go); settle (settle.go) later makes
// the journal durable and tidies it.
//
// Ownership: the loop goroutine reads and writes the watch fields; the
// rest is touched by the one goroutine processing the task, which the
// loop starts and waits for (a task is never processed twice at once, and
// the loop touches nothing of it meanwhile). Settling works on a
// settlement handed out of the task, not on the task.
type task struct {
	id string
	d  *Daemon

	// Watch state (the loop's).
	watched bool // its directory has a watch
	// unwatchable: adding its watch failed (inotify's limit); the rescans
	// serve it.
	unwatchable bool
	finished    bool      // completed, failed or cancelled: not watched
	waitTill    time.Time // a marker waits for its grace period until then
	queued      bool      // woken, waiting to be processed
	woken       wake      // why it is to be processed
	scan        uint64    // the last full scan that saw its directory
	// quiet is the task directory's modification time when it was last
	// found with no marker and nothing to do: a rescan that finds it
	// unchanged need not read the directory.
	quiet time.Time
	// current: st was read from state.json and found up to date with the
	// journal (upToDate) without being loaded for a commit. Like loaded,
	// it lets a task found quiet be passed over, so that an active task
	// with nothing to do is not read again at every rescan.
	current bool
	// stopped is the error that stopped the task's last processing (an
	// I/O error: a full disk, a read-only filesystem); it is retried with
	// backoff (failures in a row), and status names it.
	stopped  error
	failures int
	since    time.Time // when it stopped
	refused  bool      // tasks/<id> is not a directory (a symlink): not served

	// The state as last written or read, so that a burst costs no re-read
	// of state.json or of the journal. Kept only for unfinished tasks.
	loaded bool
	st     workspace.State
	plan   *workspace.Plan // the plan st tracks, when known
	next   int64           // the next journal sequence number
	fi     os.FileInfo     // state.json as last written or read; nil if none
	// valid: st has passed the state schema (read and validated, or
	// validated before it was written), so a commit need only check what
	// it changes.
	valid bool

	// progress is the subtasks in progress, for the timeout detector.
	progress []friction.InProgress
	// unsettled is the journal work settle has left to do.
	unsettled settlement
}

// outcome is what processing a task tells the loop.
type outcome struct {
	finished bool      // the task is completed, failed or cancelled
	gone     bool      // the task directory is gone
	waitTill time.Time // a marker waits for its grace period until then
	taken    int       // markers journaled
	// partial: only the markers the wake named were looked for, and none
	// was there; it says nothing of other markers waiting in the
	// directory, or of their grace periods.
	partial bool
	err     error
}

var errNoTask = errors.New("no task.json yet")

func statePath(id string) string   { return path.Join(workspace.TaskDir(id), "state.json") }
func journalPath(id string) string { return path.Join(workspace.TaskDir(id), JournalDir) }

// process brings the task up to date and takes every marker waiting in
// its directory: it takes the task's lock, loads the state (from memory
// when state.json is still the file last written, else from disk with its
// journal, recovering a corrupt or missing state.json), then takes the
// markers chunk by chunk and commits them in one state write. w says
// which markers woke it; recover forces the load from disk (start-up).
func (t *task) process(ctx context.Context, w wake, recover bool) (out outcome) {
	d := t.d
	fi, err := d.ws.Root().Lstat(workspace.TaskDir(t.id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out.gone = true
		return out
	case err == nil && !fi.IsDir():
		// A symlink (or anything else) in tasks/ is never followed.
		out.gone, out.err = true, fmt.Errorf("tasks/%s is a %s, not a directory: not served", t.id, workspace.FileKind(fi.Mode()))
		return out
	}
	if err == nil && w.all && !recover && t.quietAt(fi) {
		// Nothing was added to the directory since it was last quiet.
		out.finished = t.finished || vocab.Finished(t.st.Status)
		return out
	}
	if !t.mayHaveMarkers(w) {
		// Only a look at the whole directory may find the task quiet: a
		// marker a wake did not name may be waiting for its grace period.
		whole := w.all || len(w.names) == 0
		if !recover && t.stopped == nil && (t.loaded || t.current || t.finished) {
			out.finished = t.finished || vocab.Finished(t.st.Status)
			out.partial = !whole
			if whole {
				t.noteQuiet(fi)
			}
			return out
		}
		if t.upToDate() {
			// Nothing to take and nothing past state.json in the
			// journal: no lock, no write.
			out.finished = vocab.Finished(t.st.Status)
			out.partial = !whole
			if whole {
				t.noteQuiet(fi)
			}
			return out
		}
	}
	lk, err := d.ws.LockTask(ctx, t.id, daemonAgent)
	if errors.Is(err, workspace.ErrNotFound) {
		out.gone = true // removed since: taking its lock made nothing
		return out
	}
	if err != nil {
		out.err = err
		return out
	}
	defer lk.Release()
	if _, err := d.ws.Root().Lstat(workspace.TaskDir(t.id)); errors.Is(err, fs.ErrNotExist) {
		// Removed by cleanup while we waited for its lock.
		out.gone = true
		return out
	}
	if err := t.load(ctx, recover); err != nil {
		if !errors.Is(err, errNoTask) {
			out.err = err
		}
		return out
	}
	out.taken, out.waitTill, out.err = t.take(ctx)
	out.finished = vocab.Finished(t.st.Status)
	if vocab.Finished(t.st.Status) {
		// A finished task takes no more work worth caching.
		t.forget()
	}
	return out
}

// quietAt reports whether the task, whose directory's Lstat is fi, is
// known to have nothing to do: found quiet, and its directory unchanged
// since (a marker dropped, or a state.json replaced, changes it; journal/
// changes only by the daemon's hand).
func (t *task) quietAt(fi fs.FileInfo) bool {
	return fi.IsDir() && t.stopped == nil && (t.loaded || t.current || t.finished) && fi.ModTime().Equal(t.quiet)
}

// noteQuiet remembers the directory's modification time of a task found
// with nothing to do (fi is its Lstat from before it was read).
func (t *task) noteQuiet(fi fs.FileInfo) {
	if fi != nil {
		t.quiet = fi.ModTime()
	}
}

// forget drops the cached state: the next process reads the task from
// disk.
func (t *task) forget() {
	t.loaded, t.current, t.st, t.plan, t.fi, t.valid, t.progress = false, false, workspace.State{}, nil, nil, false, nil
}

// hasMarkers reports whether the task directory holds a marker name (or
// cannot be read, which the lock and load will then report).
func (t *task) hasMarkers() bool {
	names, err := markerNames(t.d.ws, t.id)
	return err != nil || len(names) > 0
}

// mayHaveMarkers reports whether the task directory may hold a marker:
// when w names markers, whether one of them is still there (a look-up of
// each name, which does not read the directory: while agents are dropping
// markers, reading it waits for their renames and fsyncs); otherwise
// hasMarkers.
func (t *task) mayHaveMarkers(w wake) bool {
	if w.all || len(w.names) == 0 {
		return t.hasMarkers()
	}
	for _, n := range w.names {
		if _, err := t.d.ws.Root().Lstat(markerPath(t.id, n)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// markerNames lists the marker names in a task directory.
func markerNames(ws *workspace.Workspace, id string) ([]string, error) {
	f, err := ws.Root().Open(workspace.TaskDir(id))
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

// noteProgress remembers the subtasks in progress, for the timeout
// detector.
func (t *task) noteProgress() {
	t.progress = t.progress[:0]
	for sid, s := range t.st.Subtasks {
		if s.Status != machine.SubtaskInProgress || s.StartedAt == nil {
			continue
		}
		it := friction.InProgress{TaskID: t.id, SubtaskID: sid, StartedAt: *s.StartedAt}
		if t.plan != nil {
			for _, ps := range t.plan.Subtasks {
				if ps.ID == sid {
					it.Complexity = ps.EstimatedComplexity
				}
			}
		}
		t.progress = append(t.progress, it)
	}
}
