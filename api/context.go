package api

import (
	"net/http"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

// threadTask is the thread of the path and its task (the query's task,
// else looked up), checked against the grant.
func (c *call) threadTask() (thread, task string, err error) {
	thread = c.r.PathValue("thread")
	if err := workspace.ValidateID("thread id", thread); err != nil {
		return "", "", err
	}
	task = c.r.URL.Query().Get("task")
	if task == "" {
		if task, err = c.h.st.ResolveThread(c.r.Context(), thread); err != nil {
			return "", "", err
		}
	} else if err := workspace.ValidateID("task id", task); err != nil {
		return "", "", err
	}
	if err := c.mayTask(task); err != nil {
		return "", "", err
	}
	if _, err := c.h.st.GetThread(c.r.Context(), task, thread); err != nil {
		return "", "", err
	}
	return thread, task, nil
}

func (h *Handler) context(c *call) error {
	thread, task, err := c.threadTask()
	if err != nil {
		return err
	}
	budget, err := c.intQuery("budget", ops.DefaultContextBudget, 0, 10_000_000)
	if err != nil {
		return err
	}
	unlimited, err := c.boolQuery("unlimited")
	if err != nil {
		return err
	}
	b, err := service.Context(c.r.Context(), h.st, thread, ops.ContextOptions{Budget: budget, Unlimited: unlimited, TaskID: task})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, b)
}

func (h *Handler) preamble(c *call) error {
	thread, task, err := c.threadTask()
	if err != nil {
		return err
	}
	detail := c.r.URL.Query().Get("detail")
	switch detail {
	case "", "minimal", "standard", "verbose":
	default:
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter detail", Msg: "not minimal, standard or verbose", Hint: "give detail=minimal, standard or verbose, or leave it out"}
	}
	max, err := c.intQuery("max_message_bytes", 0, 1, 1<<20)
	if err != nil {
		return err
	}

	p, err := service.Preamble(c.r.Context(), h.st, thread, ops.PreambleOptions{Detail: detail, MaxMessageBytes: max, TaskID: task, Surface: ops.SurfaceHTTP})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, p)
}

// systemContextReply is GET /api/v1/agent/system-context's answer.
type systemContextReply struct {
	Agent string `json:"agent"`
	Task  string `json:"task,omitempty"`
	Text  string `json:"text"`
}

// systemContext is the caller's "what am I" block, naming the routes of
// this API; with ?task= it says whether that task has env data.
func (h *Handler) systemContext(c *call) error {
	task := c.r.URL.Query().Get("task")
	if task != "" {
		if err := workspace.ValidateID("task id", task); err != nil {
			return err
		}
		if err := c.mayTask(task); err != nil {
			return err
		}
	}
	text, err := service.SystemContext(c.r.Context(), h.st, c.agent(), task, ops.SurfaceHTTP)
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, systemContextReply{Agent: c.agent(), Task: task, Text: text})
}
