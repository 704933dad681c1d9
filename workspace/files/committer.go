package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// committer is the single writer's handle on one task of the tree
// (workspace.Committer): it caches the state it last wrote, so that a
// burst costs no re-read of state.json or of the journal. A marker's way
// through it reads in one line: Commit looks at the task directory, loads
// the state (recover.go), takes the markers into the journal (take.go,
// judging each with marker.go) and commits them through the state machine
// (commit.go); the settle work it hands the daemon (settle.go) later
// makes the journal durable and tidies it.
//
// One goroutine at a time calls Commit (the daemon's promise); settle may
// run beside it and shares only unsettled, under mu.
type committer struct {
	s  *Store
	id string

	// finished: the last commit found the task completed, failed or
	// cancelled, with nothing waiting.
	finished bool
	// failed: the last commit failed; nothing cached is trusted.
	failed bool
	// quiet is the task directory's modification time when it was last
	// found with no marker and nothing to do: a look that finds it
	// unchanged need not read the directory.
	quiet time.Time
	// current: st was read from state.json and found up to date with the
	// journal (upToDate) without being loaded for a commit. Like loaded,
	// it lets a task found quiet be passed over.
	current bool

	// The state as last written or read. Kept only for unfinished tasks.
	loaded bool
	st     workspace.State
	plan   *workspace.Plan // the plan st tracks, when known
	next   int64           // the next journal sequence number
	fi     os.FileInfo     // state.json as last written or read; nil if none
	// valid: st has passed the state schema (read and validated, or
	// validated before it was written), so a commit need only check what
	// it changes.
	valid bool
	// folder is st, owned and folded in place by the next commit, made
	// when a commit first folds a record; nil until then. enc holds the
	// encoding of the entries of st as last written. Both go with the
	// cached state (forget): a commit then costs what its records change.
	folder *machine.Fold
	enc    statecheck.Encoder

	// names is the set of marker names the journal holds (names.go),
	// built when a commit first has a marker to take; nil until then.
	names *journaledNames

	// progress is the subtasks in progress, for the timeout detector,
	// kept by id in inProgress; complexity the estimated complexity of
	// each subtask of plan, by id, built when first needed.
	progress   []workspace.InProgress
	inProgress machine.Progress
	complexity map[string]string
	// events are the events of the commit under way (appended before its
	// state, or the commit fails: none is ever lost, see eventlog.go).
	events []workspace.Event
	// folding and marks are what the commit under way tells the
	// daemon's metrics (marks.go).
	folding folding
	marks   []workspace.Mark

	// open is the task directory and its journal while take holds them
	// open: the commit's writes go through them.
	open *taskDirs

	mu        sync.Mutex
	unsettled settlement // the journal work settle has left to do
}

var _ workspace.Served = (*Store)(nil)

// Committer is the daemon's handle on task id (workspace.Served).
func (s *Store) Committer(id string) workspace.Committer { return &committer{s: s, id: id} }

var errNoTask = errors.New("no task.json yet")

func statePath(id string) string   { return path.Join(workspace.TaskDir(id), "state.json") }
func journalPath(id string) string { return path.Join(workspace.TaskDir(id), JournalDir) }

// Commit brings the task up to date and takes the markers waiting in its
// directory (workspace.Committer): it takes the task's lock, loads the
// state (from memory when state.json is still the file last written, else
// from disk with its journal, recovering a corrupt or missing state.json),
// then takes up to req.Max markers chunk by chunk and commits them in one
// state write. req.Markers names the markers that woke it.
func (t *committer) Commit(ctx context.Context, req workspace.CommitRequest) (workspace.Applied, error) {
	t.events, t.marks = nil, nil
	t.folding = folding{recs: t.folding.recs[:0], dropped: t.folding.dropped[:0]}
	a, err := t.process(ctx, req)
	t.failed = err != nil
	a.Events, a.Marks = t.events, t.marks
	t.events, t.marks = nil, nil
	if err == nil {
		a.Progress = slices.Clone(t.progress)
		t.finished = a.Finished && a.WaitUntil.IsZero()
	}
	if !t.settled() {
		a.Settle = t.settle
	}
	return a, err
}

// process is Commit's work.
func (t *committer) process(ctx context.Context, req workspace.CommitRequest) (out workspace.Applied, err error) {
	s := t.s
	whole := len(req.Markers) == 0
	fi, err := s.Root().Lstat(workspace.TaskDir(t.id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out.Gone = true
		return out, nil
	case err == nil && !fi.IsDir():
		// A symlink (or anything else) in tasks/ is never followed.
		out.Refused = fmt.Errorf("tasks/%s is a %s, not a directory: not served", t.id, workspace.FileKind(fi.Mode()))
		return out, nil
	}
	if err == nil && whole && t.quietAt(fi) {
		// Nothing was added to the directory since it was last quiet.
		out.Finished = t.finished || vocab.Finished(t.st.Status)
		return out, nil
	}
	// The task directory, opened once: the looks, the lock, the load and
	// the take go through it rather than each walking from the root.
	td, err := s.Root().OpenRoot(workspace.TaskDir(t.id))
	if errors.Is(err, fs.ErrNotExist) {
		out.Gone = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("open task %s: %w", t.id, err)
	}
	defer td.Close()
	look := &taskLook{ws: s, id: t.id, td: td}
	defer look.close()
	if !t.mayHaveMarkers(td, look, req.Markers) {
		// Only a look at the whole directory may find the task quiet: a
		// marker a wake did not name may be waiting for its grace period.
		if !t.failed && (t.loaded || t.current || t.finished) {
			out.Finished = t.finished || vocab.Finished(t.st.Status)
			out.Partial = !whole
			if whole {
				t.noteQuiet(fi)
			}
			return out, nil
		}
		if t.upToDate(look) {
			// Nothing to take and nothing past state.json in the
			// journal: no lock, no write.
			out.Finished = vocab.Finished(t.st.Status)
			out.Partial = !whole
			out.Seq = t.st.JournalSeq
			if whole {
				t.noteQuiet(fi)
			}
			return out, nil
		}
	}
	lk, err := s.lockTaskIn(ctx, td, t.id, daemonAgent)
	if err != nil {
		return out, err
	}
	defer lk.Release()
	now, err := s.Root().Lstat(workspace.TaskDir(t.id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Removed by cleanup while we waited for its lock.
		out.Gone = true
		return out, nil
	case err == nil && !os.SameFile(fi, now):
		// Removed and made again since it was opened: the next commit
		// opens the new one.
		return out, fmt.Errorf("task %s: its directory was replaced while its lock was taken; looking again", t.id)
	}
	dirs, err := openTaskDirsIn(s, td, t.id)
	if err != nil {
		return out, err
	}
	defer dirs.close()
	t.open = &dirs
	defer func() { t.open = nil }()
	if err := t.load(ctx, t.failed || !t.loaded); err != nil {
		if errors.Is(err, errNoTask) {
			return out, nil
		}
		return out, err
	}
	out.Taken, out.More, out.WaitUntil, err = t.take(ctx, req.Max)
	out.Seq = t.st.JournalSeq
	out.Finished = vocab.Finished(t.st.Status)
	if out.Finished {
		// A finished task takes no more work worth caching.
		t.forget()
	}
	return out, err
}

// quietAt reports whether the task, whose directory's Lstat is fi, is
// known to have nothing to do: found quiet, and its directory unchanged
// since (a marker dropped, or a state.json replaced, changes it; journal/
// changes only by the daemon's hand).
func (t *committer) quietAt(fi fs.FileInfo) bool {
	return fi.IsDir() && !t.failed && (t.loaded || t.current || t.finished) && fi.ModTime().Equal(t.quiet)
}

// noteQuiet remembers the directory's modification time of a task found
// with nothing to do (fi is its Lstat from before it was read). A time
// younger than pollSettled is not remembered: a marker renamed in within
// the same tick of the kernel's coarse clock would leave it unchanged.
func (t *committer) noteQuiet(fi fs.FileInfo) {
	if fi != nil && time.Since(fi.ModTime()) >= pollSettled {
		t.quiet = fi.ModTime()
	}
}

// forget drops the cached state: the next commit reads the task from
// disk.
func (t *committer) forget() {
	t.loaded, t.current, t.st, t.plan, t.fi, t.valid, t.progress = false, false, workspace.State{}, nil, nil, false, nil
	t.names, t.folder, t.complexity, t.inProgress = nil, nil, nil, machine.Progress{}
	t.enc.Reset()
}

// mayHaveMarkers reports whether the task directory td may hold a marker:
// when names are given, whether one of them is still there (a look-up of
// each name, which does not read the directory: while agents are dropping
// markers, reading it waits for their renames and fsyncs); otherwise
// whether the directory holds a marker name (or cannot be read, which the
// lock and load will then report).
func (t *committer) mayHaveMarkers(td *os.Root, look *taskLook, names []string) bool {
	if len(names) == 0 {
		names, err := look.markerNames()
		return err != nil || len(names) > 0
	}
	for _, n := range names {
		if _, err := td.Lstat(n); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// readMarkerNames lists the marker names in f, an open task directory,
// from where f stands. A read that returns fewer names than it asked for
// reached the end: no read more is made to hear so.
func readMarkerNames(f *os.File) ([]string, error) {
	const batch = 1024
	var out []string
	for {
		names, err := f.Readdirnames(batch)
		for _, n := range names {
			if _, ok := workspace.IsMarkerName(n); ok {
				out = append(out, n)
			}
		}
		if err != nil && err != io.EOF {
			return out, err
		}
		if err == io.EOF || len(names) < batch {
			return out, nil
		}
	}
}

// noteProgress remembers the subtasks in progress, for the timeout
// detector: of those changed names when it knows the others, else of
// all, so that a commit pays for what it changed.
func (t *committer) noteProgress(changed statecheck.Changed) {
	if t.complexity == nil {
		t.complexity = machine.Complexity(t.plan)
	}
	t.inProgress.Note(t.id, t.st, &changed)
	t.progress = t.inProgress.AppendTo(t.progress[:0], t.complexity)
}
