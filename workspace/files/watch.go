package files

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.Watcher = (*Store)(nil)

// Watch reports what changes in the tree (workspace.Watcher). One
// goroutine, the caller's, owns the loop: it selects over the context and
// the watcher's events and errors, coalesces what is queued into the
// tasks it touches, and calls each once per batch. On an overflow or a
// watcher error it watches every directory again and reports Everything.
//
// It watches tasks/, every task directory (events.log, state.json,
// plan.json and task.json live there; env data changes arrive with their
// env_stored events), friction/, memory/, memory/global, each agent's
// memory directory and memory/namespaces/, where every write of
// namespaced memory appends to its events.log. Temporary files and markers (names that begin with a dot)
// are not reported: what they lead to is.
func (s *Store) Watch(ctx context.Context, each func(workspace.Change)) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	l := &watchLoop{s: s, fw: fw, root: s.Dir(), watched: map[string]bool{}}
	if err := l.add("tasks"); err != nil {
		return err
	}
	for _, d := range []string{"friction", "memory", "memory/global", "memory/agents", workspace.MemoryDir} {
		_ = l.add(d) // absent in an older tree: nothing to watch
	}
	l.addAll(ctx)
	each(workspace.Change{Everything: true})
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
			if c, ok := l.take(); ok {
				each(c)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			l.addAll(ctx)
			l.dirty, l.friction, l.memory = nil, false, false
			each(workspace.Change{Everything: true, Err: fmt.Errorf("watch %s: %w", l.root, err)})
		}
	}
}

type watchLoop struct {
	s       *Store
	fw      *fsnotify.Watcher
	root    string
	watched map[string]bool // directories watched, relative to the root

	dirty    []string // tasks touched since the last report (with repeats)
	friction bool
	memory   bool
	problem  error // a directory that could not be watched
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

// addAll watches every task directory and agent memory directory there
// is now.
func (l *watchLoop) addAll(ctx context.Context) {
	if agents, err := l.s.MemoryAgents(ctx); err == nil {
		for _, a := range agents {
			_ = l.add("memory/agents/" + a)
		}
	}
	ids, err := l.s.TaskIDs(ctx)
	if err != nil {
		return
	}
	for _, id := range ids {
		_ = l.add("tasks/" + id) // one removed meanwhile: its removal was seen
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
		l.dirty = append(l.dirty, parts[1])
	case "friction":
		l.friction = true
	case "memory":
		l.memory = true
		if len(parts) == 3 && parts[1] == "agents" && ev.Has(fsnotify.Create) {
			_ = l.add("memory/agents/" + parts[2])
		}
		// Every put and delete of namespaced memory appends to its
		// events.log there: one watch sees them all.
		if len(parts) == 2 && parts[1] == "namespaces" && ev.Has(fsnotify.Create) {
			_ = l.add(workspace.MemoryDir)
		}
	}
}

// take makes the report of what was noted: each touched task directory
// that is one is watched first, so that nothing written in it after the
// report goes unseen.
func (l *watchLoop) take() (workspace.Change, bool) {
	c := workspace.Change{Friction: l.friction, Memory: l.memory}
	slices.Sort(l.dirty)
	for _, id := range slices.Compact(l.dirty) {
		if !l.s.IsTaskDir(id) {
			delete(l.watched, "tasks/"+id)
		} else if err := l.add("tasks/" + id); err != nil && l.problem == nil {
			l.problem = fmt.Errorf("watch task %s (it updates on the next change elsewhere): %w", id, err)
		}
		c.Tasks = append(c.Tasks, id)
	}
	c.Err, l.problem = l.problem, nil
	l.dirty, l.friction, l.memory = nil, false, false
	return c, len(c.Tasks) > 0 || c.Friction || c.Memory
}
