package workspace

import (
	"context"
	"errors"

	"github.com/workspaced/workspaced/schemas"
)

// AgentsFile is the agent cards file relative to the root.
const AgentsFile = "config/agents.json"

// LoadAgents reads and validates config/agents.json; a missing file is an
// empty set of cards.
func (w *Workspace) LoadAgents(ctx context.Context) (AgentCards, error) {
	data, err := w.ReadFile(AgentsFile)
	if errors.Is(err, ErrNotFound) {
		return AgentCards{Agents: []AgentCard{}}, nil
	}
	if err != nil {
		return AgentCards{}, err
	}
	if err := schemas.Validate(schemas.KindAgents, data); err != nil {
		return AgentCards{}, &Error{Kind: ErrInvalid, Op: "read " + AgentsFile, Err: err, Hint: "fix the file; validating the workspace lists every problem"}
	}
	var c AgentCards
	if err := decodeStrict(AgentsFile, data, w.settings.Limits.MaxDepth, &c); err != nil {
		return AgentCards{}, err
	}
	return c, nil
}

// Card returns the card of one agent, and false if it has none.
func (c AgentCards) Card(name string) (AgentCard, bool) {
	for _, a := range c.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return AgentCard{}, false
}

// WantsPreamble reports whether the card asks for delegation context
// (the default when unset).
func (a AgentCard) WantsPreamble() bool { return a.DelegationContext == nil || *a.DelegationContext }

// WantsMemory reports whether the card asks for its memory in the system
// context (the default when unset).
func (a AgentCard) WantsMemory() bool { return a.MemoryInContext == nil || *a.MemoryInContext }
