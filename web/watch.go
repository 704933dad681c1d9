package web

import (
	"context"
	"sync"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The panel hears of changes from its store's Watcher (on files, fsnotify
// over the tree; on a database, its notifications). The Watcher calls
// back from one goroutine, one batch at a time: for each batch the panel
// reads each touched task's summary and new events once and hands the
// result to the hub. The first batch (Everything) builds the index; a
// later Everything, after the watch lost track, looks at everything
// again. The per-task read positions are owned by that goroutine alone.

type watchLoop struct {
	s         *Server
	positions map[string]int64 // per task: where its events were read to
	indexed   bool
}

// Run watches the store and tells the streams what changed until ctx is
// done; the keep-alive comments go out meanwhile. Call it once.
func (s *Server) Run(ctx context.Context) error {
	l := &watchLoop{s: s, positions: map[string]int64{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		ka := time.NewTicker(s.cfg.KeepAlive)
		defer ka.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ka.C:
				s.hub.pingAll()
			}
		}
	})
	return s.watcher.Watch(ctx, func(c workspace.Change) { l.change(ctx, c) })
}

// change takes one report of the store's watcher.
func (l *watchLoop) change(ctx context.Context, c workspace.Change) {
	if c.Err != nil {
		l.s.log.Warn("web: the watch of the store had trouble", "err", c.Err, "looking_at_everything", c.Everything)
	}
	if c.Everything {
		if !l.indexed {
			l.firstScan(ctx)
			l.indexed = true
			close(l.s.ready)
			return
		}
		l.scanAll(ctx)
		return
	}
	out := change{tasks: map[string]bool{}, friction: c.Friction, memory: c.Memory}
	for _, id := range c.Tasks {
		out.tasks[id] = true
		out.events = l.look(ctx, id, out.events)
	}
	if len(out.tasks) > 0 || out.friction || out.memory {
		l.s.hub.publish(out)
	}
}

// look reads task id again: its summary and its new events (appended to
// evs); a task that is gone leaves the index.
func (l *watchLoop) look(ctx context.Context, id string, evs []streamEvent) []streamEvent {
	st := l.s.st
	sum, ok := summarize(ctx, st, id)
	if !ok {
		// Gone, or task.json not written yet: its creation reports it again.
		l.s.index.remove(id)
		delete(l.positions, id)
		return evs
	}
	l.s.index.put(sum)
	next, err := st.ReadEventsFrom(ctx, id, l.positions[id], func(e workspace.PositionedEvent) {
		evs = append(evs, streamEvent{ID: eventID(id, e.End), PositionedEvent: e})
	})
	if err == nil {
		l.positions[id] = next
	}
	return evs
}

// scanAll looks at every task after the watch lost track: the tasks gone
// leave the index, every other is read again, and every stream hears of
// them, of friction and of memory.
func (l *watchLoop) scanAll(ctx context.Context) {
	ids, err := l.s.st.TaskIDs(ctx)
	if err != nil {
		l.s.log.Warn("web: cannot list the tasks", "err", err)
		return
	}
	c := workspace.Change{Tasks: ids, Friction: true, Memory: true}
	present := make(map[string]bool, len(ids))
	for _, id := range ids {
		present[id] = true
	}
	for _, id := range l.s.index.ids() {
		if !present[id] {
			c.Tasks = append(c.Tasks, id)
		}
	}
	l.change(ctx, c)
}

// firstScan builds the index, reading each task once, a few at a time,
// and its events only to find where they end.
func (l *watchLoop) firstScan(ctx context.Context) {
	st := l.s.st
	ids, err := st.TaskIDs(ctx)
	if err != nil {
		l.s.log.Warn("web: cannot list the tasks", "err", err)
		return
	}
	type res struct {
		id  string
		end int64
	}
	work := make(chan string)
	out := make(chan res, len(ids))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for id := range work {
				if sum, ok := summarize(ctx, st, id); ok {
					l.s.index.put(sum)
				}
				end, _ := st.ReadEventsFrom(ctx, id, 0, func(workspace.PositionedEvent) {})
				out <- res{id, end}
			}
		})
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		work <- id
	}
	close(work)
	wg.Wait()
	close(out)
	for r := range out {
		l.positions[r.id] = r.end
	}
}

func (x *index) ids() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ids := make([]string, 0, len(x.tasks))
	for id := range x.tasks {
		ids = append(ids, id)
	}
	return ids
}
