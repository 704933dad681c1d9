package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// callerView is GET /api/v1/agent's answer.
type callerView struct {
	Agent        string   `json:"agent"`
	Tasks        []string `json:"tasks"`
	May          []string `json:"may"`
	GlobalMemory string   `json:"global_memory"`
	Token        string   `json:"token"`
}

func (h *Handler) whoAmI(c *call) error {
	g := c.who.Grant
	v := callerView{Agent: g.Agent, Tasks: g.Tasks, May: g.May, GlobalMemory: g.GlobalMemory}
	if c.who.Token {
		v.Token = g.ID()
	}
	if v.May == nil {
		v.May = []string{}
	}
	if v.GlobalMemory == "" {
		v.GlobalMemory = tokens.GlobalNone
	}
	return c.reply(http.StatusOK, v)
}

// taskList is GET /api/v1/tasks's answer.
type taskList struct {
	Tasks []workspace.TaskSummary `json:"tasks"`
	Total int                     `json:"total"`
}

func (h *Handler) listTasks(c *call) error {
	limit, err := c.intQuery("limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	offset, err := c.intQuery("offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	all, err := h.st.ListTasks(c.r.Context())
	if err != nil {
		return err
	}
	seen := all[:0:0]
	for _, t := range all {
		if c.who.Grant.Task(t.Task.ID) {
			seen = append(seen, t)
		}
	}
	out := taskList{Tasks: []workspace.TaskSummary{}, Total: len(seen)}
	if offset < len(seen) {
		out.Tasks = seen[offset:min(len(seen), offset+limit)]
	}
	return c.reply(http.StatusOK, out)
}

// newTask is POST /api/v1/tasks's body.
type newTask struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Context     string   `json:"context"`
	Constraints []string `json:"constraints"`
	Priority    string   `json:"priority"`
	To          string   `json:"to"`
}

func (h *Handler) createTask(c *call) error {
	if !slices.Contains(c.who.Grant.Tasks, tokens.AllTasks) {
		return refuse(http.StatusForbidden, kindForbidden, fmt.Sprintf("agent %s may not create tasks: its token covers %s, not every task", c.agent(), c.who.Grant.TaskList()),
			"ask for a token over every task (--task '*') to create tasks")
	}
	var in newTask
	if err := c.decode("the new task", &in); err != nil {
		return err
	}
	t, err := h.st.CreateTask(c.r.Context(), workspace.NewTaskRequest{ID: in.ID, Description: in.Description, Context: in.Context,
		Constraints: in.Constraints, Priority: in.Priority, SubmittedBy: c.agent(), To: in.To})
	if err != nil {
		return err
	}
	c.w.Header().Set("Location", Prefix+"tasks/"+t.ID)
	return c.reply(http.StatusCreated, t)
}

func (h *Handler) getTask(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	t, err := h.st.GetTask(c.r.Context(), id)
	if err != nil {
		return err
	}
	out := workspace.TaskSummary{Task: t}
	s, err := h.st.ReadState(c.r.Context(), id)
	switch {
	case err == nil:
		out.State = &s
	case errors.Is(err, workspace.ErrNotFound):
	default:
		out.Error = err.Error()
	}
	return c.reply(http.StatusOK, struct {
		Task  workspace.Task   `json:"task"`
		State *workspace.State `json:"state"`
		Error string           `json:"error,omitempty"`
	}{out.Task, out.State, out.Error})
}

// document answers with one of the task's documents (name in the
// protocol: plan.json, outputs/s1.json, reviews/r1.json).
func (h *Handler) document(c *call, name string) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	doc, err := h.st.ReadTaskDoc(c.r.Context(), id, name)
	if err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", "application/json")
	_, _ = c.w.Write(append(doc, '\n'))
	return nil
}

func (h *Handler) getPlan(c *call) error {
	v, err := c.intQuery("version", 0, 1, 1<<30)
	if err != nil {
		return err
	}
	id, idErr := c.taskID()
	if v == 0 && idErr == nil {
		// Once approved, the version the daemon runs.
		v = service.RunningPlan(c.r.Context(), h.st, id)
	}
	if v == 0 {
		return h.document(c, "plan.json")
	}
	// The current version is plan.json; the earlier ones are kept apart.
	if idErr == nil {
		if p, err := h.st.ReadPlan(c.r.Context(), id, 0); err == nil && p.Version == v {
			return h.document(c, "plan.json")
		}
	}
	return h.document(c, fmt.Sprintf("plans/plan_v%d.json", v))
}

func (h *Handler) getOutput(c *call) error {
	s := c.r.PathValue("subtask")
	if err := workspace.ValidateID("subtask id", s); err != nil {
		return err
	}
	return h.document(c, "outputs/"+s+".json")
}

func (h *Handler) getReview(c *call) error {
	s := c.r.PathValue("review")
	if err := workspace.ValidateID("review id", s); err != nil {
		return err
	}
	return h.document(c, "reviews/"+s+".json")
}
