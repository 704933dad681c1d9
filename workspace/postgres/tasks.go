package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

func (s *Store) LoadAgents() (workspace.AgentCards, error) {
	return workspace.AgentCards{}, notYet("load agents")
}
func (s *Store) SaveAgents(ctx context.Context, cards workspace.AgentCards) error {
	return notYet("save agents")
}
func (s *Store) CreateTask(ctx context.Context, req workspace.NewTaskRequest) (workspace.Task, error) {
	return workspace.Task{}, notYet("create task")
}
func (s *Store) TaskIDs() ([]string, error)                  { return nil, notYet("list tasks") }
func (s *Store) ListTasks() ([]workspace.TaskSummary, error) { return nil, notYet("list tasks") }
