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
//
// Every operation takes the caller's context first and hands it to each
// store call. It also looks at the context itself between store calls, so
// it stops over a store that ignores the context: when the context ends,
// it returns the context's error (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded), never a result made from reads that the end
// of the context cut short.
type Ops struct {
	Backend
}

// Over returns the shared operations over b.
func Over(b Backend) Ops { return Ops{b} }

// threadsReporter is a store that can say which of a task's threads it
// could not read (the file tree: a thread file that is broken); the
// context lists them as omitted.
type threadsReporter interface {
	ThreadsReport(ctx context.Context, taskID string) ([]Thread, []Omission, error)
}

// readThreads lists a task's threads, and the ones the store could not
// read when it can say so.
func (w Ops) readThreads(ctx context.Context, taskID string) ([]Thread, []Omission, error) {
	if r, ok := w.Backend.(threadsReporter); ok {
		return r.ThreadsReport(ctx, taskID)
	}
	ts, err := w.ListThreads(ctx, taskID)
	return ts, nil, err
}

// Chain returns the threads from the root down to threadID. A cycle in the
// parent pointers, a missing parent, or a chain deeper than MaxChainDepth is
// an error naming the thread where the walk broke. When ctx ends, the walk
// stops with its error.
func (w Ops) Chain(ctx context.Context, taskID, threadID string) ([]Thread, error) {
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
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("chain of thread %s: %w", threadID, err)
		}
		t, err := w.GetThread(ctx, taskID, id)
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

var _ Backend = Store(nil)
