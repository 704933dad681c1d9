package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

// The tree's wake-ups for the daemon: an inotify watch (fsnotify) of
// tasks/ and of every active task directory the daemon follows. A marker
// renamed into a task directory names itself; a new task directory, a
// removed one or a task.json written wakes its task whole; an overflow or
// a watcher error says everything must be looked at again.

// wakeBuffer is how many wake-ups wait for the daemon before the source
// waits for it (the kernel's queue holds more meanwhile).
const wakeBuffer = 4096

// haveInotify says the platform has inotify, the default wake-up source
// where it has (elsewhere fsnotify's kqueue would hold a descriptor per
// directory and per file in it: the poll is the default there).
const haveInotify = runtime.GOOS == "linux"

// Wakeups starts the tree's wake-up source (workspace.Served): opt.Mode
// "inotify" (the default on Linux) or "poll" (the default elsewhere),
// opt.Interval the poll's interval (zero: DefaultPollInterval).
func (s *Store) Wakeups(ctx context.Context, opt workspace.WakeOptions) (workspace.Wakeups, error) {
	switch opt.Mode {
	case "":
		if !haveInotify {
			return s.pollWakeups(ctx, opt.Interval), nil
		}
	case "inotify":
		if !haveInotify {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve", Msg: "this platform has no inotify",
				Hint: "use --wakeups poll (the default here)"}
		}
	case "poll":
		return s.pollWakeups(ctx, opt.Interval), nil
	default:
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve", Msg: fmt.Sprintf("no wake-up mode %q", opt.Mode),
			Hint: "use inotify or poll"}
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	tasks := filepath.Join(s.Dir(), "tasks")
	if err := fw.Add(tasks); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %w", tasks, err)
	}
	w := &notifyWakeups{s: s, fw: fw, tasks: tasks, c: make(chan workspace.Wake, wakeBuffer), done: make(chan struct{})}
	go w.run(ctx)
	return w, nil
}

// notifyWakeups is the inotify wake-up source.
type notifyWakeups struct {
	s     *Store
	fw    *fsnotify.Watcher
	tasks string // the tasks/ directory
	c     chan workspace.Wake
	done  chan struct{}
	held  atomic.Int64 // task directories watched, and tasks/
}

func (w *notifyWakeups) C() <-chan workspace.Wake { return w.c }
func (w *notifyWakeups) Mode() string             { return "inotify" }
func (w *notifyWakeups) Held() int                { return int(w.held.Load()) + 1 }

// Follow watches a task directory (never through a symlink). A task gone,
// or an entry that is not a directory, is ErrNotFound.
func (w *notifyWakeups) Follow(id string) error {
	if !w.s.IsTaskDir(id) {
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: "watch task " + id, Msg: "no task directory"}
	}
	if err := w.fw.Add(filepath.Join(w.tasks, id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "watch task " + id, Err: err}
		}
		return &workspace.Error{Kind: workspace.ErrLocked, Op: "watch task " + id, Err: err,
			Hint: "raise the inotify watch limit (sysctl fs.inotify.max_user_watches)"}
	}
	w.held.Add(1)
	return nil
}

// Unfollow removes a task directory's watch (gone already when the
// directory was removed).
func (w *notifyWakeups) Unfollow(id string) {
	_ = w.fw.Remove(filepath.Join(w.tasks, id))
	w.held.Add(-1)
}

func (w *notifyWakeups) Close() error {
	err := w.fw.Close()
	<-w.done
	return err
}

// run turns the watcher's events into wake-ups until ctx ends or the
// watcher is closed; then it closes C. The events already queued when one
// arrives are taken with it, and those of one task sent as one wake-up:
// a burst of markers costs the daemon's loop one wake-up, not one each.
func (w *notifyWakeups) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.c)
	for {
		var wks []workspace.Wake
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			wks = w.add(wks, ev)
		drain:
			for len(wks) < wakeBuffer {
				select {
				case ev, ok := <-w.fw.Events:
					if !ok {
						break drain
					}
					wks = w.add(wks, ev)
				default:
					break drain
				}
			}
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = errors.New("the watch queue overflowed")
			}
			wks = append(wks, workspace.Wake{All: true, Err: fmt.Errorf("%w; looking at every task", err)})
		}
		for _, wk := range wks {
			select {
			case w.c <- wk:
			case <-ctx.Done():
				return
			}
		}
	}
}

// add adds the wake-up of ev, if any, to wks, merged with the last one
// when it is of the same task.
func (w *notifyWakeups) add(wks []workspace.Wake, ev fsnotify.Event) []workspace.Wake {
	wk, ok := w.note(ev)
	if !ok {
		return wks
	}
	if n := len(wks); n > 0 && wks[n-1].Task == wk.Task && wk.Task != "" {
		last := &wks[n-1]
		if last.All || wk.All {
			last.All, last.Markers = true, nil
		} else {
			last.Markers = append(last.Markers, wk.Markers...)
		}
		return wks
	}
	return append(wks, wk)
}

// note is the wake-up an event makes, if any.
func (w *notifyWakeups) note(ev fsnotify.Event) (workspace.Wake, bool) {
	rel, err := filepath.Rel(w.tasks, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return workspace.Wake{}, false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	id := parts[0]
	if workspace.ValidateID("task id", id) != nil {
		return workspace.Wake{}, false
	}
	switch {
	case len(parts) == 1:
		// tasks/<id> itself: a new task directory, or one removed.
		if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			return workspace.Wake{Task: id, All: true}, true
		}
	case len(parts) == 2:
		name := parts[1]
		if _, ok := workspace.IsMarkerName(name); ok && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write)) {
			return workspace.Wake{Task: id, Markers: []string{name}}, true
		}
		if name == "task.json" && ev.Has(fsnotify.Create) {
			return workspace.Wake{Task: id, All: true}, true
		}
	}
	return workspace.Wake{}, false
}
