package files

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/workspace"
)

// The poll wake-up source: it looks at the modification time of tasks/
// and of every active task directory the daemon follows, every interval,
// with no descriptor and no kernel watch per task. A marker renamed into a
// task directory changes its modification time, which wakes the task; a
// change of tasks/ (a task created or removed) wakes every task. It is
// the source where the platform has no inotify (macOS and the BSDs, whose
// kqueue holds a descriptor for every watched directory and every file in
// it), and `serve --wakeups poll` anywhere.
//
// A directory's modification time has the granularity of the kernel's
// coarse clock (a few milliseconds): a second change within the same tick
// leaves it as it was (an agent's temporary file, then its rename into a
// marker). So a directory whose time was younger than pollSettled when it
// was last looked at is woken again at the next look: a change made in the
// same tick after that look goes unseen by the time alone.

// DefaultPollInterval is how often the poll source looks: at 1,000 active
// tasks, half a percent of a core (docs/PERFORMANCE.md).
const DefaultPollInterval = 500 * time.Millisecond

// pollSettled is how old a directory's modification time must be before
// an unchanged time is taken to mean nothing changed.
const pollSettled = 50 * time.Millisecond

// pollWakeups is the poll wake-up source.
type pollWakeups struct {
	tasks    string // the tasks/ directory
	interval time.Duration
	young    bool // tasks/ was younger than pollSettled at the last look
	c        chan workspace.Wake
	cancel   context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	dirs    []polled // the followed task directories, in no order
	tasksAt time.Time
}

// polled is one followed task directory and its modification time when
// last looked at.
type polled struct {
	id, path string
	mtime    time.Time
	young    bool // mtime was younger than pollSettled at the last look
}

func (s *Store) pollWakeups(ctx context.Context, interval time.Duration) *pollWakeups {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &pollWakeups{tasks: filepath.Join(s.Dir(), "tasks"), interval: interval,
		c: make(chan workspace.Wake, wakeBuffer), cancel: cancel, done: make(chan struct{})}
	w.tasksAt, _ = mtime(w.tasks)
	go w.run(ctx)
	return w
}

func (w *pollWakeups) C() <-chan workspace.Wake { return w.c }
func (w *pollWakeups) Mode() string             { return "poll" }

// Held is 0: the poll holds no descriptor and no kernel watch.
func (w *pollWakeups) Held() int { return 0 }

// Follow starts looking at a task directory (never through a symlink: a
// task gone, or an entry that is not a directory, is ErrNotFound).
func (w *pollWakeups) Follow(id string) error {
	p := filepath.Join(w.tasks, id)
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: "watch task " + id, Msg: "no task directory"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The daemon looks at it on follow: a change after its time as it is
	// now wakes it (a young time wakes it at the first look).
	w.dirs = append(w.dirs, polled{id: id, path: p, mtime: fi.ModTime(), young: time.Since(fi.ModTime()) < pollSettled})
	return nil
}

// Unfollow stops looking at a task directory.
func (w *pollWakeups) Unfollow(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.IndexFunc(w.dirs, func(d polled) bool { return d.id == id }); i >= 0 {
		w.dirs[i] = w.dirs[len(w.dirs)-1]
		w.dirs = w.dirs[:len(w.dirs)-1]
	}
}

func (w *pollWakeups) Close() error {
	w.cancel()
	<-w.done
	return nil
}

// run looks every interval until ctx ends; then it closes C.
func (w *pollWakeups) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.c)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, wk := range w.look(time.Now()) {
			select {
			case w.c <- wk:
			case <-ctx.Done():
				return
			}
		}
	}
}

// look compares every modification time with the last one seen, and
// returns the wake-ups of what changed.
func (w *pollWakeups) look(now time.Time) []workspace.Wake {
	var out []workspace.Wake
	if at, err := mtime(w.tasks); err == nil {
		if !at.Equal(w.tasksAt) || w.young {
			out = append(out, workspace.Wake{All: true})
		}
		w.tasksAt, w.young = at, now.Sub(at) < pollSettled
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.dirs {
		d := &w.dirs[i]
		at, err := mtime(d.path)
		if err != nil {
			// Gone: the daemon's commit finds it so.
			out = append(out, workspace.Wake{Task: d.id, All: true})
			continue
		}
		if !at.Equal(d.mtime) || d.young {
			out = append(out, workspace.Wake{Task: d.id, All: true})
		}
		d.mtime, d.young = at, now.Sub(at) < pollSettled
	}
	return out
}

// mtime is a path's modification time, not following a symlink: one
// system call, and no allocation (a look makes one per active task).
func mtime(p string) (time.Time, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return time.Time{}, err
	}
	return time.Unix(st.Mtim.Unix()), nil
}
