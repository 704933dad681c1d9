package service

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// ValidateState parses a state.json of task id and checks it against
// its schema and the task, as the daemon checks one before it trusts it.
func ValidateState(id string, data []byte) (workspace.State, error) {
	return files.ValidateState(id, data)
}

// RebuildTree derives task id's state again from its task.json and
// journal/ in the tree w, folding the records as the daemon folds them;
// it writes nothing.
func RebuildTree(ctx context.Context, w *workspace.Workspace, id string) (workspace.State, error) {
	return files.Rebuild(ctx, w, id)
}
