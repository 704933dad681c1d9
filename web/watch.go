package web

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

// The watch loop is the file tree's source of wake-ups (a database
// backend would feed the same hub from its notifications). One goroutine
// owns it: it selects over the context, the watcher's events and errors
// and the keep-alive ticker; it coalesces what is queued into the tasks it
// touches, reads each touched task's new events and summary once, and
// hands the result to the hub. On an overflow or a watcher error it looks
// at everything again.
//
// It watches tasks/, every task directory (events.log, state.json,
// plan.json and task.json live there; env data changes arrive with their
// env_stored events), friction/ and the memory directories.

type watchLoop struct {
	s       *Server
	fw      *fsnotify.Watcher
	root    string
	offsets map[string]int64 // per task: where its events.log was read to
	watched map[string]bool  // directories watched, relative to the root

	dirty    map[string]bool // tasks touched since the last pass
	friction bool
	memory   bool
}

func (s *Server) watch(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	l := &watchLoop{s: s, fw: fw, root: s.ws.Dir(), offsets: map[string]int64{}, watched: map[string]bool{}, dirty: map[string]bool{}}
	if err := l.add("tasks"); err != nil {
		return err
	}
	for _, d := range []string{"friction", "memory/global", "memory/agents"} {
		_ = l.add(d) // absent in an older tree: nothing to watch
	}
	l.watchAgents()
	l.scanAll(ctx, true)
	close(s.ready)
	ka := time.NewTicker(s.cfg.KeepAlive)
	defer ka.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			l.note(ev)
		drain:
			for {
				select {
				case ev, ok := <-fw.Events:
					if !ok {
						break drain
					}
					l.note(ev)
				default:
					break drain
				}
			}
			l.pass()
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			s.log.Warn("web: watcher error, looking at everything again", "err", err)
			l.watchAgents()
			l.scanAll(ctx, false)
		case <-ka.C:
			s.hub.pingAll()
		}
	}
}

// add watches dir (relative to the root) once.
func (l *watchLoop) add(dir string) error {
	if l.watched[dir] {
		return nil
	}
	if err := l.fw.Add(filepath.Join(l.root, filepath.FromSlash(dir))); err != nil {
		return err
	}
	l.watched[dir] = true
	return nil
}

func (l *watchLoop) watchAgents() {
	agents, err := l.s.ws.MemoryAgents()
	if err != nil {
		return
	}
	for _, a := range agents {
		_ = l.add("memory/agents/" + a)
	}
}

// note records what one fsnotify event touched.
func (l *watchLoop) note(ev fsnotify.Event) {
	rel, err := filepath.Rel(l.root, ev.Name)
	if err != nil {
		return
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch parts[0] {
	case "tasks":
		if len(parts) < 2 || strings.HasPrefix(parts[1], ".") {
			return
		}
		if len(parts) == 2 && ev.Has(fsnotify.Remove|fsnotify.Rename) {
			delete(l.watched, "tasks/"+parts[1])
		}
		if len(parts) == 3 && strings.HasPrefix(parts[2], ".") {
			return // temporary files and markers: what they lead to follows
		}
		l.dirty[parts[1]] = true
	case "friction":
		l.friction = true
	case "memory":
		l.memory = true
		if len(parts) == 3 && parts[1] == "agents" && ev.Has(fsnotify.Create) {
			_ = l.add("memory/agents/" + parts[2])
		}
	}
}

// pass reads what the noted changes touched and tells the hub.
func (l *watchLoop) pass() {
	c := change{tasks: l.dirty, friction: l.friction, memory: l.memory}
	for id := range l.dirty {
		c.events = l.look(id, c.events)
	}
	l.dirty, l.friction, l.memory = map[string]bool{}, false, false
	if len(c.tasks) > 0 || c.friction || c.memory {
		l.s.hub.publish(c)
	}
}

// look reads task id again: its summary, its new events (appended to
// evs), and makes sure its directory is watched.
func (l *watchLoop) look(id string, evs []streamEvent) []streamEvent {
	ws := l.s.ws
	if !ws.IsTaskDir(id) {
		l.s.index.remove(id)
		delete(l.offsets, id)
		delete(l.watched, "tasks/"+id)
		return evs
	}
	if err := l.add("tasks/" + id); err != nil {
		l.s.log.Warn("web: cannot watch a task; it updates on the next change elsewhere or a reload", "task", id, "err", err)
	}
	sum, ok := summarize(ws, id)
	if !ok {
		return evs // task.json not written yet: its creation wakes us again
	}
	l.s.index.put(sum)
	end, err := ws.ReadEventsFrom(id, l.offsets[id], func(e workspace.PositionedEvent) {
		evs = append(evs, streamEvent{ID: eventID(id, e.End), PositionedEvent: e})
	})
	if err == nil {
		l.offsets[id] = end
	}
	return evs
}

// scanAll looks at every task: at start to build the index (reading each
// task once, a few at a time, and its events only to find their end), and
// after an overflow to catch up with everything.
func (l *watchLoop) scanAll(ctx context.Context, initial bool) {
	ws := l.s.ws
	ids, err := ws.TaskIDs()
	if err != nil {
		l.s.log.Warn("web: cannot list the tasks", "err", err)
		return
	}
	present := make(map[string]bool, len(ids))
	for _, id := range ids {
		present[id] = true
		if err := l.add("tasks/" + id); err != nil && !errors.Is(err, context.Canceled) {
			l.s.log.Debug("web: cannot watch a task", "task", id, "err", err)
		}
	}
	for _, id := range l.s.index.ids() {
		if !present[id] {
			l.s.index.remove(id)
			delete(l.offsets, id)
			l.dirty[id] = true
		}
	}
	if !initial {
		for _, id := range ids {
			l.dirty[id] = true
		}
		l.friction, l.memory = true, true
		l.pass()
		return
	}
	// The first look, a few tasks at a time: summaries and where each
	// events.log ends.
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
				if sum, ok := summarize(ws, id); ok {
					l.s.index.put(sum)
				}
				end, _ := ws.ReadEventsFrom(id, 0, func(workspace.PositionedEvent) {})
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
		l.offsets[r.id] = r.end
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
