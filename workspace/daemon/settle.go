package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"

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
func (s settlement) settle(ws *workspace.Workspace, id string) error {
	if len(s.files) > 0 {
		if err := syncRecords(ws, id, s.files); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
	}
	removeTaken(ws, id, s.taken)
	if s.backups {
		if err := s.set.Settle(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncRecords makes the given record files of a task durable: one
// syncfs(2) of the workspace's filesystem (one journal commit for every
// record of the burst, instead of an fsync each, which would keep the
// filesystem committing and stall every other write), then an fsync of
// the journal directory. Where syncfs is not available the files are
// fsynced one by one.
func syncRecords(ws *workspace.Workspace, id string, files []string) error {
	if err := syncFS(ws.Root()); err != nil {
		for _, name := range files {
			f, err := ws.Root().Open(path.Join(journalPath(id), name))
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
	return atomicfile.SyncDir(ws.Root(), journalPath(id))
}

// removeTaken removes taken marker files whose records are durable. A
// failure is harmless: the next load removes them.
func removeTaken(ws *workspace.Workspace, id string, names []string) {
	for _, n := range names {
		rel := path.Join(journalPath(id), n)
		if err := ws.Root().Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = ws.Root().RemoveAll(rel) // a directory named like a marker
		}
	}
}

// settle hands every task's settle work to a goroutine beside the loop
// (never two at once), which sends back what it could not do.
func (l *loop) settle(ctx context.Context) {
	if l.settling {
		return
	}
	work := l.takeSettlements()
	if len(work) == 0 {
		return
	}
	l.settling = true
	ws, log := l.d.ws, l.d.log
	l.settleWG.Go(func() {
		var failed []unsettled
		for _, u := range work {
			if err := u.s.settle(ws, u.id); err != nil {
				if ctx.Err() == nil {
					log.Warn("make journal durable", "task", u.id, "err", err)
				}
				failed = append(failed, u)
			}
		}
		l.settled <- failed
	})
}

// settleNow settles every task's work in the loop's goroutine (the daemon
// is stopping).
func (l *loop) settleNow() {
	for _, u := range l.takeSettlements() {
		if err := u.s.settle(l.d.ws, u.id); err != nil {
			l.d.log.Warn("make journal durable", "task", u.id, "err", err)
		}
	}
}

// takeSettlements hands every task's settle work out of it.
func (l *loop) takeSettlements() []unsettled {
	var work []unsettled
	for id, t := range l.d.tasks {
		if !t.unsettled.empty() {
			work = append(work, unsettled{id: id, s: t.unsettled})
			t.unsettled = settlement{}
		}
	}
	l.settleAt = time.Time{}
	return work
}

// requeue hands settle work that failed back to its tasks (unless they
// are gone), for the next settle.
func (l *loop) requeue(failed []unsettled) {
	for _, u := range failed {
		if t := l.d.tasks[u.id]; t != nil {
			u.s.merge(t.unsettled)
			t.unsettled = u.s
			l.settleSoon()
		}
	}
}

// settleSoon makes sure a settle is due.
func (l *loop) settleSoon() {
	if l.settleAt.IsZero() {
		l.settleAt = l.d.now().Add(DefaultSettle)
	}
}
