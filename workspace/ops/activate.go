package ops

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// ThreadRef names a thread and the task it belongs to.
type ThreadRef struct {
	Task   string `json:"task"`
	Thread string `json:"thread"`
}

// Activation is what ActivateThread did: the thread made active, and the
// agent's other threads it set pending.
type Activation struct {
	Thread  workspace.Thread `json:"thread"`
	Pending []ThreadRef      `json:"pending"`
}

// agentThread is a thread with the task whose directory holds it.
type agentThread struct {
	task string
	t    workspace.Thread
}

// agentThreads returns every readable thread addressed to agent (its To)
// in every task, by task id, then creation time, then id. Thread files that
// do not read are passed over: they belong to no one for certain.
func (w Ops) agentThreads(ctx context.Context, agent string) ([]agentThread, error) {
	ids, err := w.TaskIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("threads of agent %s: %w", agent, err)
	}
	var out []agentThread
	for _, id := range ids {
		threads, _, err := w.readThreads(ctx, id)
		if err == nil {
			// A thread the end of ctx kept from being read was passed
			// over as unreadable: the list is then not the agent's.
			err = ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("threads of agent %s: %w", agent, err)
		}
		for _, t := range threads {
			if t.To == agent {
				out = append(out, agentThread{task: id, t: t})
			}
		}
	}
	return out, nil
}

// ActivateThread makes a thread its agent's active thread: its status
// becomes active and activated_at now, then every other active thread
// addressed to the agent, in any task, is set pending — dehydrated in the
// agent's context. agent is the thread's To ("" means that one); a thread
// of another agent, or one that is done, is refused with nothing written.
// Each thread is written under its own lock; the activated thread is
// written first, so an interruption leaves it the one ActiveThread picks.
// A ctx that has ended writes nothing.
func (w Ops) ActivateThread(ctx context.Context, taskID, threadID, agent string) (Activation, error) {
	if err := ctx.Err(); err != nil {
		return Activation{}, fmt.Errorf("activate thread %s: %w", threadID, err)
	}
	t, err := w.GetThread(ctx, taskID, threadID)
	if err != nil {
		return Activation{}, err
	}
	if agent == "" {
		agent = t.To
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return Activation{}, err
	}
	op := "activate thread " + threadID
	if t.To != agent {
		return Activation{}, workspace.Invalidf(op, "activate one of "+agent+"'s own threads, or name "+t.To+" as the agent",
			"the thread is addressed to %s, not %s", t.To, agent)
	}
	act := Activation{Pending: []ThreadRef{}}
	act.Thread, err = w.ModifyThread(ctx, taskID, threadID, agent, func(t *workspace.Thread) (bool, error) {
		if t.Status == "done" {
			return false, workspace.Invalidf(op, "reopen it (status active) first if there is more to do", "the thread is done")
		}
		t.Status = "active"
		t.ActivatedAt = w.Now()
		return true, nil
	})
	if err != nil {
		return Activation{}, err
	}
	others, err := w.agentThreads(ctx, agent)
	if err != nil {
		return act, err
	}
	for _, o := range others {
		if o.t.Status != "active" || (o.task == taskID && o.t.ID == threadID) {
			continue
		}
		changed := false
		_, err := w.ModifyThread(ctx, o.task, o.t.ID, agent, func(t *workspace.Thread) (bool, error) {
			// Read again under the lock: only a thread still active and
			// still the agent's is set pending.
			changed = t.Status == "active" && t.To == agent
			if changed {
				t.Status = "pending"
			}
			return changed, nil
		})
		if err != nil {
			return act, fmt.Errorf("%s: set thread %s of task %s pending: %w", op, o.t.ID, o.task, err)
		}
		if changed {
			act.Pending = append(act.Pending, ThreadRef{Task: o.task, Thread: o.t.ID})
		}
	}
	return act, nil
}

// ActiveThread finds an agent's active thread: among the threads addressed
// to it whose status is active, the one activated last (ActivateThread);
// when none was ever activated, the newest. Ties fall to the task id and
// then the thread id, so the answer depends on the tree alone. An agent
// with no active thread is ErrNotFound. When ctx ends, the search stops
// with its error.
func (w Ops) ActiveThread(ctx context.Context, agent string) (ThreadRef, error) {
	best, _, err := w.activeOf(ctx, agent)
	if err != nil {
		return ThreadRef{}, err
	}
	return ThreadRef{Task: best.task, Thread: best.t.ID}, nil
}

// activeOf is ActiveThread with every thread of the agent.
func (w Ops) activeOf(ctx context.Context, agent string) (agentThread, []agentThread, error) {
	if err := workspace.ValidateID("agent", agent); err != nil {
		return agentThread{}, nil, err
	}
	threads, err := w.agentThreads(ctx, agent)
	if err != nil {
		return agentThread{}, nil, err
	}
	best, ok := pickActive(threads)
	if !ok {
		open := 0
		for _, a := range threads {
			if a.t.Status == "pending" {
				open++
			}
		}
		msg := "no thread addressed to it is active"
		if open > 0 {
			msg += fmt.Sprintf(" (%d pending)", open)
		}
		return agentThread{}, nil, workspace.NotFoundf("active thread of "+agent, "activate one of its threads, or name the thread", "%s", msg)
	}
	return best, threads, nil
}

// pickActive is ActiveThread's choice among an agent's threads.
func pickActive(threads []agentThread) (agentThread, bool) {
	var act []agentThread
	for _, a := range threads {
		if a.t.Status == "active" {
			act = append(act, a)
		}
	}
	if len(act) == 0 {
		return agentThread{}, false
	}
	sort.SliceStable(act, func(i, j int) bool {
		a, b := act[i].t, act[j].t
		if !a.ActivatedAt.Equal(b.ActivatedAt) {
			return a.ActivatedAt.After(b.ActivatedAt)
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		if act[i].task != act[j].task {
			return act[i].task < act[j].task
		}
		return strings.Compare(a.ID, b.ID) < 0
	})
	return act[0], true
}
