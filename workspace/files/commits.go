package files

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.CommitSource = (*Store)(nil)

// Commits hears the daemon's commits to task (workspace.CommitSource): a
// watch of the task's directory, whose state.json the daemon renames into
// place once the state and the journal records it reflects are durable.
// Its channel receives once at the start and after each change of a file
// there that is neither a marker nor a temporary file (their names begin
// with a dot). One inotify instance serves every waiter of the store (an
// MCP server serving many agents has many), each task's directory
// watched while someone waits on it.
func (s *Store) Commits(ctx context.Context, task string) (<-chan struct{}, error) {
	if err := workspace.ValidateID("task id", task); err != nil {
		return nil, err
	}
	return s.hub.Subscribe(ctx, task, &dirWatch{hub: &s.hub, tasks: filepath.Join(s.Dir(), "tasks")})
}

// dirWatch is the hub's listener: one fsnotify watcher, a directory
// added for each task waited on.
type dirWatch struct {
	hub   *workspace.CommitHub
	tasks string // the tree's tasks/
	fw    *fsnotify.Watcher
}

func (d *dirWatch) Start(ctx context.Context) (func(), error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", d.tasks, err)
	}
	d.fw = fw
	return func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if !strings.HasPrefix(filepath.Base(ev.Name), ".") {
					d.hub.Wake(filepath.Base(filepath.Dir(ev.Name)))
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
				d.hub.Wake("") // an overflow: anything may have changed
			}
		}
	}, nil
}

func (d *dirWatch) Watch(task string) error {
	dir := filepath.Join(d.tasks, task)
	if err := d.fw.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return nil
}

func (d *dirWatch) Unwatch(task string) { _ = d.fw.Remove(filepath.Join(d.tasks, task)) }
