package workspace

import (
	"context"
	"fmt"
)

// Backend is what the logic that is the same on every backend needs of a
// store: everything a Reader reads, and a thread changed as one
// read-modify-write.
type Backend interface {
	Reader
	// ModifyThread reads a thread under its lock (or in its
	// transaction), lets change modify it, and writes it back with
	// updated_at when change says so; a thread change leaves alone is
	// returned as read. An error from change is returned and nothing is
	// written.
	ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *Thread) (bool, error)) (Thread, error)
}

// Ops is the logic that is the same on every backend, over a Backend:
// context assembly, the delegation preamble, the system context,
// provenance chains, skills in context and thread activation. A second
// backend gets all of it by implementing the Store.
type Ops struct {
	Backend
}

// Over returns the shared operations over b.
func Over(b Backend) Ops { return Ops{b} }

// threadsReporter is a store that can say which of a task's threads it
// could not read (the file tree: a thread file that is broken); the
// context lists them as omitted.
type threadsReporter interface {
	ThreadsReport(taskID string) ([]Thread, []Omission, error)
}

// readThreads lists a task's threads, and the ones the store could not
// read when it can say so.
func (w Ops) readThreads(taskID string) ([]Thread, []Omission, error) {
	if r, ok := w.Backend.(threadsReporter); ok {
		return r.ThreadsReport(taskID)
	}
	ts, err := w.ListThreads(context.Background(), taskID)
	return ts, nil, err
}

// Chain returns the threads from the root down to threadID. A cycle in the
// parent pointers, a missing parent, or a chain deeper than MaxChainDepth is
// an error naming the thread where the walk broke.
func (w Ops) Chain(taskID, threadID string) ([]Thread, error) {
	var rev []Thread
	seen := map[string]bool{}
	id := threadID
	for {
		if seen[id] {
			return nil, &Error{Kind: ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("parent pointers form a cycle at thread %s", id), Hint: "fix parent_id in threads/" + id + ".json"}
		}
		if len(rev) >= MaxChainDepth {
			return nil, &Error{Kind: ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("deeper than %d threads", MaxChainDepth)}
		}
		seen[id] = true
		t, err := w.GetThread(context.Background(), taskID, id)
		if err != nil {
			if len(rev) > 0 {
				return nil, &Error{Kind: ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("thread %s names parent %s", rev[len(rev)-1].ID, id), Err: err}
			}
			return nil, err
		}
		if t.TaskID != "" && t.TaskID != taskID {
			return nil, &Error{Kind: ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("thread %s belongs to task %s, not %s", t.ID, t.TaskID, taskID)}
		}
		rev = append(rev, t)
		if t.ParentID == "" {
			break
		}
		id = t.ParentID
		if err := ValidateID("parent thread id", id); err != nil {
			return nil, &Error{Kind: ErrInvalid, Op: "chain of thread " + threadID, Msg: "thread " + t.ID + " has a bad parent_id", Err: err}
		}
	}
	out := make([]Thread, len(rev))
	for i, t := range rev {
		out[len(rev)-1-i] = t
	}
	return out, nil
}

// The file tree's own methods for the shared operations, for callers that
// hold a *Workspace (the daemon, the tree's tests).

// Context is Over(w).Context.
func (w *Workspace) Context(threadID string, opt ContextOptions) (ContextBundle, error) {
	return Over(w).Context(threadID, opt)
}

// Preamble is Over(w).Preamble.
func (w *Workspace) Preamble(threadID string, opt PreambleOptions) (Preamble, error) {
	return Over(w).Preamble(threadID, opt)
}

// SystemContext is Over(w).SystemContext.
func (w *Workspace) SystemContext(agent, taskID string) (string, error) {
	return Over(w).SystemContext(agent, taskID)
}

// Capabilities is Over(w).Capabilities.
func (w *Workspace) Capabilities(agent, taskID string) (string, error) {
	return Over(w).Capabilities(agent, taskID)
}

// ThreadSkills is Over(w).ThreadSkills.
func (w *Workspace) ThreadSkills(taskID, threadID string) ([]SkillChoice, error) {
	return Over(w).ThreadSkills(taskID, threadID)
}

// Chain is Over(w).Chain.
func (w *Workspace) Chain(taskID, threadID string) ([]Thread, error) {
	return Over(w).Chain(taskID, threadID)
}

// ActivateThread is Over(w).ActivateThread.
func (w *Workspace) ActivateThread(ctx context.Context, taskID, threadID, agent string) (Activation, error) {
	return Over(w).ActivateThread(ctx, taskID, threadID, agent)
}

// ActiveThread is Over(w).ActiveThread.
func (w *Workspace) ActiveThread(agent string) (ThreadRef, error) { return Over(w).ActiveThread(agent) }

var _ Backend = Store(nil)
