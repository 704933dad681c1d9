package files

import (
	"context"
	"errors"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// LoadAgents reads and validates config/agents.json; a missing file is an
// empty set of cards.
func (w *Store) LoadAgents(ctx context.Context) (workspace.AgentCards, error) {
	data, err := w.ReadFile(workspace.AgentsFile)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.AgentCards{Agents: []workspace.AgentCard{}}, nil
	}
	if err != nil {
		return workspace.AgentCards{}, err
	}
	if err := schemas.Validate(schemas.KindAgents, data); err != nil {
		return workspace.AgentCards{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + workspace.AgentsFile, Err: err, Hint: "fix the file; validating the workspace lists every problem"}
	}
	var c workspace.AgentCards
	if err := workspace.DecodeStrict(workspace.AgentsFile, data, w.settings.Limits.MaxDepth, &c); err != nil {
		return workspace.AgentCards{}, err
	}
	return c, nil
}
