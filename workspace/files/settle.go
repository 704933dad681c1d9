package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/workspace"
)

// Settling: a burst's record files are written without an fsync each (the
// taken markers beside them, fsynced by their agents, are the durable
// copy meanwhile), so that a burst costs a fixed number of fsyncs whatever
// its size. A little later (DefaultSettle) settle makes them durable with
// one flush of the filesystem and then removes the taken markers; it also
// makes the burst's backups of state.json durable and prunes them to
// backups.keep. A crash before that loses nothing: a load finds the taken
// markers and does the same (see recover.go), and a backup lost costs only
// an older version, which the journal can replay past.

// settlement is the settle work of one task: what a burst left. The loop
// hands it out of the task (see loop.settle), so settling never holds up
// the taking of new markers: it touches only files nothing else changes.
type settlement struct {
	files   []string    // record files written but not yet fsynced
	taken   []string    // taken markers, each with its record in files or already durable
	backups bool        // backups/ has links not yet fsynced
	set     *backup.Set // the task's backups, when backups is set
}

// empty reports whether there is nothing to settle.
func (s settlement) empty() bool { return len(s.files) == 0 && len(s.taken) == 0 && !s.backups }

// merge adds o's work to s.
func (s *settlement) merge(o settlement) {
	s.files, s.taken = append(s.files, o.files...), append(s.taken, o.taken...)
	if o.backups {
		s.backups, s.set = true, o.set
	}
}

// settle makes the records durable, removes the taken markers, and makes
// the backups durable and prunes them. A task removed meanwhile has
// nothing left to settle. On an error nothing is lost: the work can be
// done again, or a load does it.
func (s settlement) settle(ws *Store, id string) error {
	flushed := false // the whole filesystem, by syncfs
	if len(s.files) > 0 {
		var err error
		if flushed, err = syncRecords(ws, id, s.files); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
	}
	td, err := ws.Root().OpenRoot(workspace.TaskDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed meanwhile
	}
	if err != nil {
		return fmt.Errorf("settle task %s: %w", id, err)
	}
	defer td.Close()
	removeTaken(td, s.taken)
	if s.backups {
		// Pruned through the task directory, open: one unlink each.
		set := *s.set
		set.Root, set.Dir = td, path.Base(s.set.Dir)
		err := set.Prune()
		if err == nil && !flushed {
			// The links into backups/ were made before the syncfs,
			// which made them durable; the prune's removals need not be
			// (a backup back after a crash is pruned again).
			err = s.set.Sync()
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncRecords makes the given record files of a task durable: one
// syncfs(2) of the workspace's filesystem (one journal commit for every
// record of the burst, instead of an fsync each, which would keep the
// filesystem committing and stall every other write), which makes every
// change to the filesystem before it durable, the journal directory's
// names too. Where syncfs is not available the files are fsynced one by
// one, then the journal directory. It reports whether syncfs flushed the
// filesystem.
func syncRecords(ws *Store, id string, files []string) (bool, error) {
	if err := syncFS(ws.Root()); err == nil {
		return true, nil
	}
	for _, name := range files {
		f, err := ws.Root().Open(path.Join(journalPath(id), name))
		if err != nil {
			return false, fmt.Errorf("sync journal of task %s: %w", id, err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return false, fmt.Errorf("sync journal of task %s: %w", id, err)
		}
	}
	return false, atomicfile.SyncDir(ws.Root(), journalPath(id))
}

// removeTaken removes taken marker files whose records are durable from
// the journal of td, a task directory. A failure is harmless: the next
// load removes them.
func removeTaken(td *os.Root, names []string) {
	if len(names) == 0 {
		return
	}
	jr, err := td.OpenRoot(JournalDir)
	if err != nil {
		return
	}
	defer jr.Close()
	for _, n := range names {
		if err := jr.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = jr.RemoveAll(n) // a directory named like a marker
		}
	}
}

// leave adds work for settle.
func (t *committer) leave(w settlement) {
	t.mu.Lock()
	t.unsettled.merge(w)
	t.mu.Unlock()
}

// settled reports whether nothing is left to settle.
func (t *committer) settled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsettled.empty()
}

// settle does the settle work the task's commits left (the func the
// daemon runs a moment after a commit: workspace.Applied.Settle). It runs
// beside later commits; work that fails is kept for the next time.
func (t *committer) settle() error {
	t.mu.Lock()
	w := t.unsettled
	t.unsettled = settlement{}
	t.mu.Unlock()
	if w.empty() {
		return nil
	}
	err := w.settle(t.s, t.id)
	if err != nil {
		t.leave(w)
	}
	return err
}
