package api

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/workspaced/workspaced/workspace"
)

// An open event stream sleeps until the store says something it follows
// changed: one watch of the store (workspace.Watcher: fsnotify over the
// tree, a watch of SQLite's files, PostgreSQL's LISTEN) runs while any
// stream is open and wakes the streams of the tasks it names, and the
// memory feed's when memory moved; a report of Everything (the watch has
// just begun, or lost track) wakes them all. An idle stream reads
// nothing. A stream joins before its first read, so whatever commits
// after that read is reported to it: the watch's first report, once it is
// in place, wakes every stream, which covers what committed while it was
// starting. A store without a watch, or a watch that failed, leaves the
// streams polling every PollEvery.

// wakes is the one watch of a Handler's store and the streams it wakes.
// It is safe for concurrent use.
type wakes struct {
	w    workspace.Watcher // nil: the store has none; streams poll
	warn func(msg string, args ...any)
	// reports counts the watch's reports (a test waits for the first).
	reports atomic.Int64

	mu      sync.Mutex
	waiting map[*wake]struct{}
	stop    context.CancelFunc // the running watch's; nil when none runs
	failed  bool               // the watch ended with an error: streams poll
}

// wake is one stream's place among the waiting: its task ("" for the
// memory feed) and the channel that says "read again" (one value waits at
// most).
type wake struct {
	task   string
	memory bool
	c      chan struct{}
}

// join adds a stream following task (memory: the memory feed) and starts
// the watch when none runs. It returns the stream's wake, whether the
// stream must poll instead (no watch), and leave, which the stream calls
// once it ends; the last to leave stops the watch.
func (ws *wakes) join(task string, memory bool) (wk *wake, poll bool, leave func()) {
	wk = &wake{task: task, memory: memory, c: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.w == nil || ws.failed {
		return wk, true, func() {}
	}
	if ws.waiting == nil {
		ws.waiting = map[*wake]struct{}{}
	}
	ws.waiting[wk] = struct{}{}
	if ws.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		ws.stop = cancel
		go ws.run(ctx)
	}
	return wk, false, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		delete(ws.waiting, wk)
		if len(ws.waiting) == 0 && ws.stop != nil {
			ws.stop()
			ws.stop = nil
		}
	}
}

// run is one watch, until ctx ends or the watch fails; a failure wakes
// every stream, which polls from then on.
func (ws *wakes) run(ctx context.Context) {
	err := ws.w.Watch(ctx, ws.tell)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		ws.warn("api: the watch of the store ended; event streams poll instead", "err", err.Error())
	}
	ws.mu.Lock()
	ws.failed = true
	ws.mu.Unlock()
	ws.tell(workspace.Change{Everything: true})
}

// polling says whether streams must poll: the watch failed.
func (ws *wakes) polling() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.failed
}

// tell wakes the streams c concerns.
func (ws *wakes) tell(c workspace.Change) {
	ws.reports.Add(1)
	tasks := make(map[string]bool, len(c.Tasks))
	for _, id := range c.Tasks {
		tasks[id] = true
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for wk := range ws.waiting {
		if c.Everything || (wk.memory && c.Memory) || (!wk.memory && tasks[wk.task]) {
			select {
			case wk.c <- struct{}{}:
			default:
			}
		}
	}
}
