package workspace

import (
	"slices"
	"time"
)

// PlanAmendment is a change to a running plan, as a client asks it: new
// subtasks (which may depend on existing ones), subtasks that replace the
// pending ones of the same id, and the ids of pending subtasks to
// withdraw. Apply makes the next version of the plan from it; the daemon
// judges that version against the state (the state machine's Amend).
type PlanAmendment struct {
	Add      []Subtask `json:"add,omitempty"`
	Change   []Subtask `json:"change,omitempty"`
	Withdraw []string  `json:"withdraw,omitempty"`
}

// Apply returns cur amended by a, as the document of the next version:
// cur's id, its subtasks in their order with the changed ones replaced
// and the withdrawn ones left out (of the checkpoints too), then the
// added ones. Version, created_at and created_by are left for the write
// to fill. It refuses an amendment that changes nothing, names a subtask
// twice, adds one the plan has, changes or withdraws one it has not, or
// leaves a subtask depending on a withdrawn one.
func (a PlanAmendment) Apply(cur Plan) (Plan, error) {
	const op = "amend plan"
	if err := a.Check(); err != nil {
		return Plan{}, err
	}
	have := make(map[string]bool, len(cur.Subtasks))
	for _, s := range cur.Subtasks {
		have[s.ID] = true
	}
	named := map[string]bool{}
	name := func(id, what string, wantHave bool) error {
		if err := ValidateID("subtask id", id); err != nil {
			return err
		}
		if named[id] {
			return Invalidf(op, "name each subtask once in an amendment", "subtask %s is named twice", id)
		}
		named[id] = true
		switch {
		case wantHave && !have[id]:
			return Invalidf(op, "the plan's subtasks are listed with the plan", "plan %s v%d has no subtask %s to %s", cur.ID, cur.Version, id, what)
		case !wantHave && have[id]:
			return Invalidf(op, "give a new subtask an id of its own, or change the existing one", "plan %s v%d has a subtask %s already", cur.ID, cur.Version, id)
		}
		return nil
	}
	for _, s := range a.Add {
		if err := name(s.ID, "add", false); err != nil {
			return Plan{}, err
		}
	}
	changed := map[string]Subtask{}
	for _, s := range a.Change {
		if err := name(s.ID, "change", true); err != nil {
			return Plan{}, err
		}
		changed[s.ID] = s
	}
	gone := map[string]bool{}
	for _, id := range a.Withdraw {
		if err := name(id, "withdraw", true); err != nil {
			return Plan{}, err
		}
		gone[id] = true
	}
	next := cur
	next.Version, next.CreatedAt, next.CreatedBy, next.Status = 0, time.Time{}, "", ""
	next.Subtasks = make([]Subtask, 0, len(cur.Subtasks)+len(a.Add))
	for _, s := range cur.Subtasks {
		if gone[s.ID] {
			continue
		}
		if c, ok := changed[s.ID]; ok {
			s = c
		}
		next.Subtasks = append(next.Subtasks, s)
	}
	next.Subtasks = append(next.Subtasks, a.Add...)
	for _, s := range next.Subtasks {
		for _, d := range s.Dependencies {
			if gone[d] {
				return Plan{}, Invalidf(op, "change or withdraw the subtasks that depend on it too", "subtask %s depends on %s, which the amendment withdraws", s.ID, d)
			}
		}
	}
	next.Checkpoints = nil
	for _, c := range cur.Checkpoints {
		c.Subtasks = slices.DeleteFunc(slices.Clone(c.Subtasks), func(id string) bool { return gone[id] })
		next.Checkpoints = append(next.Checkpoints, c)
	}
	return next, nil
}

// Check refuses an amendment that is wrong whatever the plan: empty, or
// naming a subtask by a bad id, or twice.
func (a PlanAmendment) Check() error {
	const op = "amend plan"
	if len(a.Add)+len(a.Change)+len(a.Withdraw) == 0 {
		return Invalidf(op, "add subtasks, change pending ones or withdraw pending ones", "the amendment is empty")
	}
	seen := map[string]bool{}
	ids := make([]string, 0, len(a.Add)+len(a.Change)+len(a.Withdraw))
	for _, s := range slices.Concat(a.Add, a.Change) {
		ids = append(ids, s.ID)
		for _, d := range s.Dependencies {
			if err := ValidateID("dependency of subtask "+s.ID, d); err != nil {
				return err
			}
		}
	}
	for _, id := range append(ids, a.Withdraw...) {
		if err := ValidateID("subtask id", id); err != nil {
			return err
		}
		if seen[id] {
			return Invalidf(op, "name each subtask once in an amendment", "subtask %s is named twice", id)
		}
		seen[id] = true
	}
	return nil
}
