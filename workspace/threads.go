package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/workspaced/workspaced/schemas"
)

// NewThreadRequest is what `thread new` takes.
type NewThreadRequest struct {
	TaskID    string
	ID        string // optional; generated when empty
	ParentID  string // default: the task's root thread
	From, To  string
	Message   string
	Concern   string
	Approach  string
	Buffers   []string
	SkillTags []string
	Status    string // default active
	// PrimaryMode is the kind of work ("analysis"): it loads the skills
	// of that mode.
	PrimaryMode string
}

func threadPath(taskID, id string) string { return path.Join(TaskDir(taskID), "threads", id+".json") }

// NewThread writes threads/<id>.json for a delegation from From to To. The
// parent must be a thread of the same task.
func (w *Workspace) NewThread(ctx context.Context, req NewThreadRequest) (Thread, error) {
	if err := w.requireTask(req.TaskID); err != nil {
		return Thread{}, err
	}
	req, err := CheckThreadRequest(req)
	if err != nil {
		return Thread{}, err
	}
	if _, err := w.GetThread(ctx, req.TaskID, req.ParentID); err != nil {
		return Thread{}, fmt.Errorf("thread %s: parent: %w", req.ID, err)
	}
	name := threadPath(req.TaskID, req.ID)
	l, err := w.LockFile(ctx, name, req.From)
	if err != nil {
		return Thread{}, err
	}
	defer l.Release()
	if w.exists(name) {
		return Thread{}, ThreadExists(req.TaskID, req.ID)
	}
	now := w.Now()
	t, data, err := BuildThread(req, now)
	if err != nil {
		return Thread{}, err
	}
	if err := w.Write(name, data); err != nil {
		return Thread{}, err
	}
	_ = w.AppendEvent(ctx, Event{Time: now, Name: "thread_created", TaskID: req.TaskID, Args: []string{req.ID}, Attrs: map[string]string{"from": req.From, "to": req.To, "parent": req.ParentID}})
	return t, nil
}

// CheckThreadRequest fills req's defaults (a fresh id, the root thread as
// parent, status active) and checks its ids. Every backend starts threads
// with it, then BuildThread.
func CheckThreadRequest(req NewThreadRequest) (NewThreadRequest, error) {
	if req.ID == "" {
		req.ID = NewID("th")
	}
	if req.ParentID == "" {
		req.ParentID = req.TaskID
	}
	if req.Status == "" {
		req.Status = "active"
	}
	for _, c := range []struct{ what, id string }{{"thread id", req.ID}, {"parent thread id", req.ParentID}, {"from", req.From}, {"to", req.To}} {
		if err := ValidateID(c.what, c.id); err != nil {
			return req, err
		}
	}
	return req, nil
}

// BuildThread is the thread req (checked) starts at time now, and its
// document's bytes.
func BuildThread(req NewThreadRequest, now time.Time) (Thread, []byte, error) {
	t := Thread{ID: req.ID, ParentID: req.ParentID, TaskID: req.TaskID, From: req.From, To: req.To, Message: req.Message,
		CreatedAt: now, Status: req.Status, Concern: req.Concern, Approach: req.Approach, Buffers: req.Buffers,
		SkillTags: req.SkillTags, PrimaryMode: req.PrimaryMode}
	data, err := ThreadDoc(t)
	return t, data, err
}

// ThreadDoc is a thread's document, checked against its schema.
func ThreadDoc(t Thread) ([]byte, error) { return marshalValidated(schemas.KindThread, t) }

// ThreadExists is the conflict of starting a thread whose id is taken.
func ThreadExists(taskID, id string) error {
	return fieldErr(ErrConflict, "new thread "+id, FieldID, "choose another id, or leave it out to get a fresh one", "a thread with this id exists in task %s", taskID)
}

// NoSuchThread is the error of a thread a task does not hold.
func NoSuchThread(taskID, id string) error {
	return notFoundf("thread "+id, "list task "+taskID+"'s threads to see which exist", "no such thread in task %s", taskID)
}

// ThreadNotResolved is the error of a thread id no task holds.
func ThreadNotResolved(id string) error {
	return fieldErr(ErrNotFound, "thread "+id, FieldTask, "create the thread first, or name the task it belongs to", "no task holds this thread")
}

// ApplyThreadUpdate sets the fields u gives on t.
func ApplyThreadUpdate(t *Thread, u ThreadUpdate) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&t.Status, u.Status)
	set(&t.Concern, u.Concern)
	set(&t.Approach, u.Approach)
	set(&t.Progress, u.Progress)
	set(&t.PrimaryMode, u.PrimaryMode)
	if u.Buffers != nil {
		t.Buffers = *u.Buffers
	}
	if u.SkillTags != nil {
		t.SkillTags = *u.SkillTags
	}
}

// GetThread reads one thread of a task.
func (w *Workspace) GetThread(ctx context.Context, taskID, id string) (Thread, error) {
	if err := w.checkTask(taskID); err != nil {
		return Thread{}, err
	}
	if err := ValidateID("thread id", id); err != nil {
		return Thread{}, err
	}
	var t Thread
	err := w.readJSON(threadPath(taskID, id), &t)
	if errors.Is(err, ErrNotFound) {
		return Thread{}, NoSuchThread(taskID, id)
	}
	if err != nil {
		return Thread{}, err
	}
	if t.ID != id {
		return Thread{}, &Error{Kind: ErrInvalid, Op: "read thread " + id, Msg: fmt.Sprintf("file holds thread %q", t.ID)}
	}
	return t, nil
}

// ResolveThread finds the task a thread belongs to: a task id is its own
// root thread; otherwise every task's threads/ is looked in.
func (w *Workspace) ResolveThread(ctx context.Context, threadID string) (string, error) {
	if err := ValidateID("thread id", threadID); err != nil {
		return "", err
	}
	if err := w.checkTask(threadID); err != nil {
		return "", err
	}
	if w.exists(path.Join(TaskDir(threadID), "task.json")) {
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
	return "", ThreadNotResolved(threadID)
}

// ListThreads returns a task's threads sorted by creation time then id.
func (w *Workspace) ListThreads(ctx context.Context, taskID string) ([]Thread, error) {
	if err := w.requireTask(taskID); err != nil {
		return nil, err
	}
	f, err := w.root.Open(path.Join(TaskDir(taskID), "threads"))
	if err != nil {
		if isNotExist(err) {
			return []Thread{}, nil
		}
		return nil, err
	}
	defer f.Close()
	out := []Thread{}
	for {
		ents, err := f.ReadDir(512)
		for _, de := range ents {
			n := de.Name()
			id, ok := strings.CutSuffix(n, ".json")
			if !ok || strings.HasPrefix(n, ".") || ValidateID("thread id", id) != nil {
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

// ThreadUpdate changes a thread's working fields; nil keeps a field.
type ThreadUpdate struct {
	Status    *string
	Concern   *string
	Approach  *string
	Progress  *string
	Buffers   *[]string
	SkillTags *[]string
	// PrimaryMode is the kind of work; "" clears it.
	PrimaryMode *string
}

// UpdateThread changes the working fields of a thread under its lock.
func (w *Workspace) UpdateThread(ctx context.Context, taskID, id, agent string, u ThreadUpdate) (Thread, error) {
	return w.ModifyThread(ctx, taskID, id, agent, func(t *Thread) (bool, error) {
		ApplyThreadUpdate(t, u)
		return true, nil
	})
}

// modifyThread reads a thread under its lock, lets change modify it, and
// writes it back (with updated_at) when change says so; a thread that
// change leaves alone is returned as read.
func (w *Workspace) ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *Thread) (bool, error)) (Thread, error) {
	if err := w.requireTask(taskID); err != nil {
		return Thread{}, err
	}
	if err := ValidateID("thread id", id); err != nil {
		return Thread{}, err
	}
	if agent == "" {
		agent = "workspaced"
	}
	if err := ValidateID("agent", agent); err != nil {
		return Thread{}, err
	}
	name := threadPath(taskID, id)
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return Thread{}, err
	}
	defer l.Release()
	t, err := w.GetThread(ctx, taskID, id)
	if err != nil {
		return Thread{}, err
	}
	write, err := change(&t)
	if err != nil || !write {
		return t, err
	}
	t.UpdatedAt = w.Now()
	data, err := ThreadDoc(t)
	if err != nil {
		return Thread{}, err
	}
	if err := w.Write(name, data); err != nil {
		return Thread{}, err
	}
	return t, nil
}
