package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

// Wake-ups on SQLite: every commit of any process writes the database's
// write-ahead log, <db>-wal (and a checkpoint the database file), so an
// fsnotify watch of the database's directory, filtered on those two names,
// hears every write on this machine. At a write the daemon looks at once
// for the tasks with markers waiting (or no state yet) with one read, and
// again trail later; a poll every DefaultPoll does the same, for an event
// the watch missed.

// DefaultPoll is how often the markers are looked at without a write
// heard.
const DefaultPoll = time.Second

// trail is when, after a write it heard, a watch looks again: for the
// rest of a burst, and for a commit whose log write it heard before the
// commit was visible (a writer with synchronous=FULL, an agent in
// another language, syncs the log between the two, in a millisecond or
// in tens of them on a busy disk). Each write heard starts it over.
var trail = []time.Duration{2 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond}

// Wakeups starts the wake-up source (workspace.Served). opt.Interval is
// the poll (zero: DefaultPoll).
func (s *Store) Wakeups(ctx context.Context, opt workspace.WakeOptions) (workspace.Wakeups, error) {
	switch opt.Mode {
	case "", "watch":
	default:
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve", Msg: fmt.Sprintf("no wake-up mode %q on SQLite", opt.Mode),
			Hint: "a sqlite: root wakes on a watch of its database file and a poll: leave --wakeups out"}
	}
	poll := opt.Interval
	if poll <= 0 {
		poll = DefaultPoll
	}
	fw, err := s.watchFiles()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &fileWakeups{c: make(chan workspace.Wake, 1024), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.c)
		defer fw.Close()
		s.loop(ctx, fw, poll, func(err error) {
			if err != nil {
				send(ctx, w.c, workspace.Wake{Err: err})
				return
			}
			s.pollWaiting(ctx, w.c)
		})
	}()
	return w, nil
}

type fileWakeups struct {
	c      chan workspace.Wake
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *fileWakeups) C() <-chan workspace.Wake { return w.c }
func (w *fileWakeups) Follow(string) error      { return nil }
func (w *fileWakeups) Unfollow(string)          {}
func (w *fileWakeups) Mode() string             { return "watch" }
func (w *fileWakeups) Held() int                { return 1 }
func (w *fileWakeups) Close() error {
	w.cancel()
	<-w.done
	return nil
}

// watchFiles watches the database's directory.
func (s *Store) watchFiles() (*fsnotify.Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.path, err)
	}
	if err := fw.Add(filepath.Dir(s.path)); err != nil {
		fw.Close()
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "watch " + filepath.Dir(s.path), Err: err,
			Hint: "raise fs.inotify.max_user_watches, or check the directory's permissions"}
	}
	return fw, nil
}

// loop calls look (with nil) once now, then at every write to the
// database heard on fw (at once, unless it looked less than trail[0]
// ago: writes in a burst are coalesced) and again trail after it, and
// every poll, and with an error when the watch reports one, until ctx
// ends. One goroutine owns it.
func (s *Store) loop(ctx context.Context, fw *fsnotify.Watcher, poll time.Duration, look func(error)) {
	db, wal := filepath.Base(s.path), filepath.Base(s.path)+"-wal"
	tick := time.NewTicker(poll)
	defer tick.Stop()
	again := time.NewTimer(time.Hour)
	again.Stop()
	step := 0
	var last time.Time
	lookNow := func() {
		look(nil)
		last = time.Now()
	}
	lookNow()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if n := filepath.Base(ev.Name); n != db && n != wal {
				continue
			}
			if time.Since(last) >= trail[0] {
				lookNow()
			}
			step = 0
			again.Reset(trail[0])
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			look(fmt.Errorf("watch %s: %w", s.path, err))
			lookNow()
		case <-again.C:
			lookNow()
			if step++; step < len(trail) {
				again.Reset(trail[step] - trail[step-1])
			}
		case <-tick.C:
			lookNow()
		}
	}
}

// pollWaiting sends each task with markers waiting or no state yet.
func (s *Store) pollWaiting(ctx context.Context, c chan<- workspace.Wake) {
	ids, err := s.waitingTasks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			send(ctx, c, workspace.Wake{Err: fmt.Errorf("look for markers: %w", err)})
		}
		return
	}
	for _, id := range ids {
		send(ctx, c, workspace.Wake{Task: id})
	}
}

func send(ctx context.Context, c chan<- workspace.Wake, w workspace.Wake) {
	select {
	case c <- w:
	case <-ctx.Done():
	}
}
