package workspace

// AgentsFile is the agent cards file relative to the root.
const AgentsFile = "config/agents.json"

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
