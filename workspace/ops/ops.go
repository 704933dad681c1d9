// Package ops is what every store shares above the Store contract:
// context assembly, the delegation preamble, the system context,
// provenance chains, skills in context and thread activation. It reads a
// store through the model's interfaces (Backend: a Reader and one thread
// read-modify-write) and knows no store: the file tree, SQLite and
// PostgreSQL give the same bytes for the same workspace.
package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// Backend is what the logic that is the same on every backend needs of a
// store: everything a Reader reads, and a thread changed as one
// read-modify-write.
type Backend interface {
	workspace.Reader
	// ModifyThread reads a thread under its lock (or in its
	// transaction), lets change modify it, and writes it back with
	// updated_at when change says so; a thread change leaves alone is
	// returned as read. An error from change is returned and nothing is
	// written.
	ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *workspace.Thread) (bool, error)) (workspace.Thread, error)
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

// MaxChainDepth bounds a walk up parent pointers; a longer chain is
// reported as an error rather than walked forever.
const MaxChainDepth = 1024

// Over returns the shared operations over b.
func Over(b Backend) Ops { return Ops{b} }

// readThreads lists a task's threads, and the ones the store could not
// read when it can say so (workspace.ThreadsReporter).
func (w Ops) readThreads(ctx context.Context, taskID string) ([]workspace.Thread, []workspace.Omission, error) {
	if r, ok := workspace.As[workspace.ThreadsReporter](w.Backend); ok {
		return r.ThreadsReport(ctx, taskID)
	}
	ts, err := w.ListThreads(ctx, taskID)
	return ts, nil, err
}

// Chain returns the threads from the root down to threadID. A cycle in the
// parent pointers, a missing parent, or a chain deeper than MaxChainDepth is
// an error naming the thread where the walk broke. When ctx ends, the walk
// stops with its error.
func (w Ops) Chain(ctx context.Context, taskID, threadID string) ([]workspace.Thread, error) {
	var rev []workspace.Thread
	seen := map[string]bool{}
	id := threadID
	for {
		if seen[id] {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("parent pointers form a cycle at thread %s", id), Hint: "fix parent_id in threads/" + id + ".json"}
		}
		if len(rev) >= MaxChainDepth {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("deeper than %d threads", MaxChainDepth)}
		}
		seen[id] = true
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("chain of thread %s: %w", threadID, err)
		}
		t, err := w.GetThread(ctx, taskID, id)
		if err != nil {
			if len(rev) > 0 {
				return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("thread %s names parent %s", rev[len(rev)-1].ID, id), Err: err}
			}
			return nil, err
		}
		if t.TaskID != "" && t.TaskID != taskID {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "chain of thread " + threadID, Msg: fmt.Sprintf("thread %s belongs to task %s, not %s", t.ID, t.TaskID, taskID)}
		}
		rev = append(rev, t)
		if t.ParentID == "" {
			break
		}
		id = t.ParentID
		if err := workspace.ValidateID("parent thread id", id); err != nil {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "chain of thread " + threadID, Msg: "thread " + t.ID + " has a bad parent_id", Err: err}
		}
	}
	out := make([]workspace.Thread, len(rev))
	for i, t := range rev {
		out[len(rev)-1-i] = t
	}
	return out, nil
}

var _ Backend = workspace.Store(nil)

// FormatChain renders a chain as "human → coordinator → solver → you (observer)".
func FormatChain(chain []workspace.Thread) string {
	if len(chain) == 0 {
		return ""
	}
	parts := []string{chain[0].From}
	for i, t := range chain {
		if i == len(chain)-1 {
			parts = append(parts, "you ("+t.To+")")
		} else {
			parts = append(parts, t.To)
		}
	}
	return strings.Join(parts, " → ")
}
