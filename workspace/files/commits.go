package files

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
)

var (
	_ workspace.CommitSource = (*Store)(nil)
	_ workspace.CommitSource = fileVerdicts{}
)

// Commits hears the daemon's commits to task (workspace.CommitSource): a
// watch of the task's directory, whose state.json the daemon renames into
// place once the state and the journal records it reflects are durable.
// Its channel receives once at the start and after each change of a file
// there that is neither a marker nor a temporary file (their names begin
// with a dot). Each call has a watch of its own, ended with ctx.
func (s *Store) Commits(ctx context.Context, task string) (<-chan struct{}, error) {
	return taskCommits(ctx, s.Workspace, task)
}

func (f fileVerdicts) Commits(ctx context.Context, task string) (<-chan struct{}, error) {
	return taskCommits(ctx, f.ws, task)
}

func taskCommits(ctx context.Context, ws *workspace.Workspace, task string) (<-chan struct{}, error) {
	if err := workspace.ValidateID("task id", task); err != nil {
		return nil, err
	}
	dir := filepath.Join(ws.Dir(), "tasks", task)
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	c := make(chan struct{}, 1)
	c <- struct{}{}
	go func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if strings.HasPrefix(filepath.Base(ev.Name), ".") {
					continue
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
			}
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}()
	return c, nil
}
