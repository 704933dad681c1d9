package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

func threadPath(taskID, id string) string {
	return path.Join(workspace.TaskDir(taskID), "threads", id+".json")
}

// NewThread writes threads/<id>.json for a delegation from From to To. The
// parent must be a thread of the same task.
func (w *Store) NewThread(ctx context.Context, req workspace.NewThreadRequest) (workspace.Thread, error) {
	if err := w.requireTask(req.TaskID); err != nil {
		return workspace.Thread{}, err
	}
	req, err := workspace.CheckThreadRequest(req)
	if err != nil {
		return workspace.Thread{}, err
	}
	if _, err := w.GetThread(ctx, req.TaskID, req.ParentID); err != nil {
		return workspace.Thread{}, fmt.Errorf("thread %s: parent: %w", req.ID, err)
	}
	name := threadPath(req.TaskID, req.ID)
	l, err := w.LockFile(ctx, name, req.From)
	if err != nil {
		return workspace.Thread{}, err
	}
	defer l.Release()
	if w.exists(name) {
		return workspace.Thread{}, workspace.ThreadExists(req.TaskID, req.ID)
	}
	now := w.Now()
	t, data, err := workspace.BuildThread(req, now)
	if err != nil {
		return workspace.Thread{}, err
	}
	if err := w.Write(name, data); err != nil {
		return workspace.Thread{}, err
	}
	_ = w.AppendEvent(ctx, workspace.Event{Time: now, Name: "thread_created", TaskID: req.TaskID, Args: []string{req.ID}, Attrs: map[string]string{"from": req.From, "to": req.To, "parent": req.ParentID}})
	return t, nil
}

// GetThread reads one thread of a task.
func (w *Store) GetThread(ctx context.Context, taskID, id string) (workspace.Thread, error) {
	if err := w.checkTask(taskID); err != nil {
		return workspace.Thread{}, err
	}
	if err := workspace.ValidateID("thread id", id); err != nil {
		return workspace.Thread{}, err
	}
	var t workspace.Thread
	err := w.readJSON(threadPath(taskID, id), &t)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Thread{}, workspace.NoSuchThread(taskID, id)
	}
	if err != nil {
		return workspace.Thread{}, err
	}
	if t.ID != id {
		return workspace.Thread{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read thread " + id, Msg: fmt.Sprintf("file holds thread %q", t.ID)}
	}
	return t, nil
}

// ResolveThread finds the task a thread belongs to: a task id is its own
// root thread; otherwise every task's threads/ is looked in.
func (w *Store) ResolveThread(ctx context.Context, threadID string) (string, error) {
	if err := workspace.ValidateID("thread id", threadID); err != nil {
		return "", err
	}
	if err := w.checkTask(threadID); err != nil {
		return "", err
	}
	if w.exists(path.Join(workspace.TaskDir(threadID), "task.json")) {
		return threadID, nil
	}
	ids, err := w.TaskIDs(ctx)
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if w.exists(threadPath(id, threadID)) {
			return id, nil
		}
	}
	return "", workspace.ThreadNotResolved(threadID)
}

// ListThreads returns a task's threads sorted by creation time then id.
func (w *Store) ListThreads(ctx context.Context, taskID string) ([]workspace.Thread, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	f, err := w.root.Open(path.Join(workspace.TaskDir(taskID), "threads"))
	if err != nil {
		if isNotExist(err) {
			return []workspace.Thread{}, nil
		}
		return nil, err
	}
	defer f.Close()
	out := []workspace.Thread{}
	for {
		ents, err := f.ReadDir(512)
		for _, de := range ents {
			n := de.Name()
			id, ok := strings.CutSuffix(n, ".json")
			if !ok || strings.HasPrefix(n, ".") || workspace.ValidateID("thread id", id) != nil {
				continue
			}
			t, terr := w.GetThread(ctx, taskID, id)
			if terr != nil {
				return nil, terr
			}
			out = append(out, t)
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// UpdateThread changes the working fields of a thread under its lock.
func (w *Store) UpdateThread(ctx context.Context, taskID, id, agent string, u workspace.ThreadUpdate) (workspace.Thread, error) {
	return w.ModifyThread(ctx, taskID, id, agent, func(t *workspace.Thread) (bool, error) {
		workspace.ApplyThreadUpdate(t, u)
		return true, nil
	})
}

// modifyThread reads a thread under its lock, lets change modify it, and
// writes it back (with updated_at) when change says so; a thread that
// change leaves alone is returned as read.
func (w *Store) ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *workspace.Thread) (bool, error)) (workspace.Thread, error) {
	if err := w.requireTask(taskID); err != nil {
		return workspace.Thread{}, err
	}
	if err := workspace.ValidateID("thread id", id); err != nil {
		return workspace.Thread{}, err
	}
	if agent == "" {
		agent = "workspaced"
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return workspace.Thread{}, err
	}
	name := threadPath(taskID, id)
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return workspace.Thread{}, err
	}
	defer l.Release()
	t, err := w.GetThread(ctx, taskID, id)
	if err != nil {
		return workspace.Thread{}, err
	}
	write, err := change(&t)
	if err != nil || !write {
		return t, err
	}
	t.UpdatedAt = w.Now()
	data, err := workspace.ThreadDoc(t)
	if err != nil {
		return workspace.Thread{}, err
	}
	if err := w.Write(name, data); err != nil {
		return workspace.Thread{}, err
	}
	return t, nil
}
