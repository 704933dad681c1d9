package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

func (s *Store) GetThread(taskID, id string) (workspace.Thread, error) {
	return workspace.Thread{}, notYet("get thread")
}
func (s *Store) ListThreads(taskID string) ([]workspace.Thread, error) {
	return nil, notYet("list threads")
}
func (s *Store) ResolveThread(threadID string) (string, error) { return "", notYet("resolve thread") }
func (s *Store) NewThread(ctx context.Context, req workspace.NewThreadRequest) (workspace.Thread, error) {
	return workspace.Thread{}, notYet("new thread")
}
func (s *Store) UpdateThread(ctx context.Context, taskID, id, agent string, u workspace.ThreadUpdate) (workspace.Thread, error) {
	return workspace.Thread{}, notYet("update thread")
}
func (s *Store) ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *workspace.Thread) (bool, error)) (workspace.Thread, error) {
	return workspace.Thread{}, notYet("modify thread")
}
