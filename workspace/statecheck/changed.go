package statecheck

// Changed names the entries of a state that may differ from the state it
// was folded from: a superset, never fewer. The state machine fills it as
// it changes entries (machine.Fold); an Encoder then encodes and checks
// those entries only. A nil *Changed notes nothing, so that code changing
// a state may call it unconditionally.
type Changed struct {
	// All: the maps were made anew (a plan approved), every entry counts
	// as changed.
	All                            bool
	Subtasks, Checkpoints, Workers map[string]struct{}
}

// Subtask notes that subtask id changed.
func (c *Changed) Subtask(id string) {
	if c != nil {
		c.note(&c.Subtasks, id)
	}
}

// Checkpoint notes that checkpoint id changed.
func (c *Changed) Checkpoint(id string) {
	if c != nil {
		c.note(&c.Checkpoints, id)
	}
}

// Worker notes that worker id changed.
func (c *Changed) Worker(id string) {
	if c != nil {
		c.note(&c.Workers, id)
	}
}

// Everything notes that every entry changed.
func (c *Changed) Everything() {
	if c != nil {
		*c = Changed{All: true}
	}
}

func (c *Changed) note(m *map[string]struct{}, id string) {
	if c.All {
		return
	}
	if *m == nil {
		*m = map[string]struct{}{}
	}
	(*m)[id] = struct{}{}
}

// Merge notes in c everything o notes.
func (c *Changed) Merge(o Changed) {
	if o.All {
		c.Everything()
		return
	}
	for id := range o.Subtasks {
		c.Subtask(id)
	}
	for id := range o.Checkpoints {
		c.Checkpoint(id)
	}
	for id := range o.Workers {
		c.Worker(id)
	}
}
