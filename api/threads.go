package api

import (
	"net/http"

	"github.com/workspaced/workspaced/workspace"
)

// Delegation threads: a task's threads listed, started (from the
// caller's agent), read and updated, as 'workspaced thread' does.

func (h *Handler) listThreads(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	ths, err := h.st.ListThreads(c.r.Context(), id)
	if err != nil {
		return err
	}
	if ths == nil {
		ths = []workspace.Thread{}
	}
	return c.reply(http.StatusOK, map[string]any{"threads": ths})
}

// newThread is POST .../threads's body; the thread is from the caller.
type newThread struct {
	ID          string   `json:"id"`
	ParentID    string   `json:"parent_id"`
	To          string   `json:"to"`
	Message     string   `json:"message"`
	Concern     string   `json:"concern"`
	Approach    string   `json:"approach"`
	Buffers     []string `json:"buffers"`
	SkillTags   []string `json:"skill_tags"`
	Status      string   `json:"status"`
	PrimaryMode string   `json:"primary_mode"`
}

func (h *Handler) newThread(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	var in newThread
	if err := c.decode("the thread", &in); err != nil {
		return err
	}
	th, err := h.st.NewThread(c.r.Context(), workspace.NewThreadRequest{TaskID: id, ID: in.ID, ParentID: in.ParentID, From: c.agent(), To: in.To,
		Message: in.Message, Concern: in.Concern, Approach: in.Approach, Buffers: in.Buffers, SkillTags: in.SkillTags, Status: in.Status, PrimaryMode: in.PrimaryMode})
	if err != nil {
		return err
	}
	c.w.Header().Set("Location", Prefix+"tasks/"+id+"/threads/"+th.ID)
	return c.reply(http.StatusCreated, th)
}

// thread is the thread of the path, checked.
func (c *call) thread() (string, error) {
	th := c.r.PathValue("thread")
	return th, workspace.ValidateID("thread id", th)
}

func (h *Handler) getThread(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	th, err := c.thread()
	if err != nil {
		return err
	}
	t, err := h.st.GetThread(c.r.Context(), id, th)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, t)
}

// threadUpdate is PATCH's body: the fields given change, the others stay.
type threadUpdate struct {
	Status      *string   `json:"status"`
	Concern     *string   `json:"concern"`
	Approach    *string   `json:"approach"`
	Progress    *string   `json:"progress"`
	Buffers     *[]string `json:"buffers"`
	SkillTags   *[]string `json:"skill_tags"`
	PrimaryMode *string   `json:"primary_mode"`
}

func (h *Handler) updateThread(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	th, err := c.thread()
	if err != nil {
		return err
	}
	var in threadUpdate
	if err := c.decode("the thread's update", &in); err != nil {
		return err
	}
	t, err := h.st.UpdateThread(c.r.Context(), id, th, c.agent(), workspace.ThreadUpdate{Status: in.Status, Concern: in.Concern, Approach: in.Approach,
		Progress: in.Progress, Buffers: in.Buffers, SkillTags: in.SkillTags, PrimaryMode: in.PrimaryMode})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, t)
}
