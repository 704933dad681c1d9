package machine

import (
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Progress is the subtasks in progress of a task's state, by id, kept by
// a committer between commits (for the timeout detector) so that a
// commit pays for the subtasks it changed, not for every subtask of the
// task. The zero Progress knows nothing: its first Note looks at all.
type Progress struct {
	items map[string]workspace.InProgress
}

// Note brings p to st, task taskID's state: changed is what changed since
// the state p last saw (nil, or All: every subtask is looked at).
func (p *Progress) Note(taskID string, st workspace.State, changed *statecheck.Changed) {
	note := func(sid string) {
		s := st.Subtasks[sid]
		if s == nil || s.Status != SubtaskInProgress || s.StartedAt == nil {
			delete(p.items, sid)
			return
		}
		p.items[sid] = workspace.InProgress{TaskID: taskID, SubtaskID: sid, StartedAt: *s.StartedAt}
	}
	if changed == nil || changed.All || p.items == nil {
		p.items = map[string]workspace.InProgress{}
		for sid := range st.Subtasks {
			note(sid)
		}
		return
	}
	for sid := range changed.Subtasks {
		note(sid)
	}
}

// Len is how many subtasks are in progress.
func (p *Progress) Len() int { return len(p.items) }

// AppendTo appends the subtasks in progress to out, each with its
// estimated complexity from complexity (by subtask id; nil: none known).
func (p *Progress) AppendTo(out []workspace.InProgress, complexity map[string]string) []workspace.InProgress {
	for sid, it := range p.items {
		it.Complexity = complexity[sid]
		out = append(out, it)
	}
	return out
}

// Complexity is the estimated complexity of each of pl's subtasks, by id
// (nil when pl is).
func Complexity(pl *workspace.Plan) map[string]string {
	if pl == nil {
		return nil
	}
	m := make(map[string]string, len(pl.Subtasks))
	for _, ps := range pl.Subtasks {
		m[ps.ID] = ps.EstimatedComplexity
	}
	return m
}
