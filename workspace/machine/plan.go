package machine

import (
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// checkPlan reports why a proposed plan cannot drive the task: a plan for
// another task, a missing or repeated id, a dependency or checkpoint
// member that names no subtask of the plan, or a dependency cycle (which
// would leave its subtasks blocked forever).
func checkPlan(p *workspace.Plan, taskID string) error {
	if p.ID == "" {
		return errors.New("plan has no id")
	}
	if p.TaskID != taskID {
		return fmt.Errorf("plan is for task %q, not %q", p.TaskID, taskID)
	}
	if p.Version < 1 {
		return fmt.Errorf("version %d is not positive", p.Version)
	}
	index := make(map[string]int, len(p.Subtasks))
	for i, s := range p.Subtasks {
		if s.ID == "" {
			return fmt.Errorf("subtask %d has no id", i+1)
		}
		if _, dup := index[s.ID]; dup {
			return fmt.Errorf("subtask %s appears twice", s.ID)
		}
		if s.MaxRetries < 0 {
			return fmt.Errorf("subtask %s has negative max_retries", s.ID)
		}
		index[s.ID] = i
	}
	for _, s := range p.Subtasks {
		for _, d := range s.Dependencies {
			if _, ok := index[d]; !ok {
				return fmt.Errorf("subtask %s depends on unknown subtask %s", s.ID, d)
			}
		}
	}
	if id := cycle(p.Subtasks, index); id != "" {
		return fmt.Errorf("subtask %s is part of a dependency cycle", id)
	}
	seen := map[string]bool{}
	for i, c := range p.Checkpoints {
		if c.ID == "" {
			return fmt.Errorf("checkpoint %d has no id", i+1)
		}
		if seen[c.ID] {
			return fmt.Errorf("checkpoint %s appears twice", c.ID)
		}
		seen[c.ID] = true
		for _, id := range c.Subtasks {
			if _, ok := index[id]; !ok {
				return fmt.Errorf("checkpoint %s names unknown subtask %s", c.ID, id)
			}
		}
	}
	return nil
}

// cycle returns a subtask on a dependency cycle, or "" when there is none.
// The search visits subtasks in plan order, so the answer is deterministic.
func cycle(subtasks []workspace.Subtask, index map[string]int) string {
	const (
		unvisited = iota
		visiting
		done
	)
	mark := make([]int, len(subtasks))
	var visit func(i int) string
	visit = func(i int) string {
		switch mark[i] {
		case visiting:
			return subtasks[i].ID
		case done:
			return ""
		}
		mark[i] = visiting
		for _, d := range subtasks[i].Dependencies {
			if id := visit(index[d]); id != "" {
				return id
			}
		}
		mark[i] = done
		return ""
	}
	for i := range subtasks {
		if id := visit(i); id != "" {
			return id
		}
	}
	return ""
}
