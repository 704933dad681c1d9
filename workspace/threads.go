package workspace

import (
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
	return FieldErr(ErrConflict, "new thread "+id, FieldID, "choose another id, or leave it out to get a fresh one", "a thread with this id exists in task %s", taskID)
}

// NoSuchThread is the error of a thread a task does not hold.
func NoSuchThread(taskID, id string) error {
	return NotFoundf("thread "+id, "list task "+taskID+"'s threads to see which exist", "no such thread in task %s", taskID)
}

// ThreadNotResolved is the error of a thread id no task holds.
func ThreadNotResolved(id string) error {
	return FieldErr(ErrNotFound, "thread "+id, FieldTask, "create the thread first, or name the task it belongs to", "no task holds this thread")
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
