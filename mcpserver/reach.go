package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

// A session serves one task, or the whole workspace its token (or, on
// stdio without a token, the host) may reach. A session of the whole
// workspace is told the task of each call: the task and thread arguments
// every task tool takes. A session bound to a task takes them too, naming
// its own task or a thread of it, so that the same call works on both;
// and a token for one task needs neither, bound or not.

// Tools of the whole workspace.
const (
	ToolListTasks  = "list_tasks"
	ToolCreateTask = "create_task"
	ToolGetContext = "get_context"
)

const (
	descListTasks  = "List the tasks you may work on, with their status."
	descCreateTask = "Create a task. Returns it."
	descGetContext = "What your thread should see, within a token budget; lists what did not fit."
)

// Arguments naming the task and the thread of a call.
const (
	argTask   = "task"
	argThread = "thread"
)

// workspaceTools are the tools that never need a task.
var workspaceTools = []string{ToolListTasks, ToolCreateTask, ToolPutMemoryItem, ToolGetMemoryItem, ToolDeleteMemoryItem,
	ToolSearchMemory, ToolMemoryNamespaces, ToolGetMemoryHistory}

// takesTask says whether a tool takes the task and thread arguments:
// every tool that works in a task (the memory tools for their session
// scope, list_capabilities for the task's env count, skills for what the
// thread loads).
func takesTask(tool string) bool { return !slices.Contains(workspaceTools, tool) }

// needsTask says whether a tool cannot run without a task: those that
// take one, but for the memory tools (their agent and global scopes need
// none), list_capabilities and skills.
func needsTask(tool string) bool {
	switch tool {
	case ToolStoreMemory, ToolGetMemory, ToolListMemory, ToolDeleteMemory, ToolListCapabilities, ToolSkills:
		return false
	}
	return takesTask(tool)
}

// withTaskArgs adds the task and thread arguments to a tool's schema,
// without a description: they are the same on every tool, and the
// instructions say what they are once.
func withTaskArgs(sch *schema) {
	sch.Properties[argTask] = &schema{Type: "string", Pattern: vocab.IDPattern}
	sch.Properties[argThread] = &schema{Type: "string", Pattern: vocab.IDPattern}
}

// stringArg is a string argument as sent, "" when absent or not a string
// (the schema check then says what is wrong with it).
func stringArg(args *callArgs, name string) string {
	var v string
	if raw, ok := args.top[name]; ok {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// on is the session a call of tool runs as: s itself, or, where the call
// names a task or a thread, s at that task and thread. A session of the
// whole workspace whose grant covers one task works on it when the call
// names none.
func (s *Server) on(ctx context.Context, extra *mcp.RequestExtra, tool string, raw json.RawMessage) (*Server, error) {
	if !takesTask(tool) {
		c := *s
		c.task, c.thread = "", ""
		return &c, nil
	}
	args := argsOf(ctx, raw)
	task, thread := stringArg(args, argTask), stringArg(args, argThread)
	if task == "" && thread == "" {
		if s.task == "" && s.grants != nil {
			if g, err := s.grants(extra); err == nil && len(g.Tasks) == 1 && g.Tasks[0] != tokens.AllTasks {
				task = g.Tasks[0]
			}
		}
		if task == "" {
			if s.task == "" && needsTask(tool) {
				return nil, &toolError{err: &workspace.Error{Kind: workspace.ErrInvalid, Op: tool, Msg: "no task named: this session serves the whole workspace"},
					hint: "pass task (call " + ToolListTasks + " to see them), or thread for a thread of one"}
			}
			return s, nil
		}
	}
	if s.task != "" && task != "" && task != s.task {
		return nil, refusal(fmt.Sprintf("this session serves task %s, not %s", s.task, task),
			"leave task out, or open a session without a task to work on several")
	}
	if task == "" && s.task != "" && thread != "" {
		task = s.task
	}
	// A task the grant does not cover is refused before it is looked
	// for: whether it exists is not the caller's to learn.
	if task != "" && s.grants != nil {
		if g, err := s.grants(extra); err == nil && !g.Task(task) {
			return nil, refusal(fmt.Sprintf("agent %s may not work on task %s: its token covers %s", s.agent, task, g.TaskList()),
				"call "+ToolListTasks+" to see the tasks you may work on")
		}
	}
	t, th, err := resolve(ctx, s.w, task, thread)
	if err != nil {
		return nil, redirect(err, workspace.ErrNotFound, "call "+ToolListTasks+" to see the tasks you may work on")
	}
	c := *s
	c.task, c.thread = t, th
	return &c, nil
}

// taskLine is one task of list_tasks.
type taskLine struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	Status      string    `json:"status,omitempty"`
	PlanStatus  string    `json:"plan_status,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func (s *Server) listTasks(ctx context.Context, extra *mcp.RequestExtra) (string, error) {
	all, err := s.w.ListTasks(ctx)
	if err != nil {
		return "", err
	}
	covers := func(string) bool { return true }
	if s.grants != nil {
		g, err := s.grants(extra)
		if err != nil {
			return "", err
		}
		covers = g.Task
	}
	out := []taskLine{}
	for _, t := range all {
		if !covers(t.Task.ID) {
			continue
		}
		l := taskLine{ID: t.Task.ID, Description: t.Task.Description, CreatedAt: t.Task.CreatedAt}
		if t.State != nil {
			l.Status, l.PlanStatus = t.State.Status, t.State.PlanStatus
		}
		out = append(out, l)
	}
	return toJSON(out)
}

type createTaskInput struct {
	ID          string   `json:"id,omitempty" pattern:"id"`
	Description string   `json:"description"`
	Context     string   `json:"context,omitempty"`
	Constraints []string `json:"constraints,omitempty"`
	Priority    string   `json:"priority,omitempty"`
	To          string   `json:"to,omitempty" pattern:"id" jsonschema:"Default coordinator."`
}

func (s *Server) createTask(ctx context.Context, req *mcp.CallToolRequest, in createTaskInput) (string, error) {
	if s.grants != nil {
		g, err := s.grants(req.Extra)
		if err != nil {
			return "", err
		}
		if !slices.Contains(g.Tasks, tokens.AllTasks) {
			return "", refusal(fmt.Sprintf("agent %s may not create tasks: its token covers %s, not every task", s.agent, g.TaskList()),
				"work on the tasks you have (list_tasks), or ask whoever runs you for a token over every task")
		}
	}
	t, err := s.w.CreateTask(ctx, workspace.NewTaskRequest{ID: in.ID, Description: in.Description, Context: in.Context,
		Constraints: in.Constraints, Priority: in.Priority, SubmittedBy: s.agent, To: in.To})
	if err != nil {
		return "", redirect(err, workspace.ErrConflict, "choose another id, or leave id out for a fresh one")
	}
	return toJSON(t)
}

type contextBudgetInput struct {
	Budget    int  `json:"budget,omitempty" minimum:"0" jsonschema:"Default 8000 (4 bytes a token)."`
	Unlimited bool `json:"unlimited,omitempty"`
}

func (s *Server) getContext(ctx context.Context, req *mcp.CallToolRequest, in contextBudgetInput) (reply, error) {
	budget := ops.DefaultContextBudget
	if _, ok, err := rawArg(ctx, req, "budget"); err != nil {
		return reply{}, err
	} else if ok {
		budget = in.Budget
	}
	b, err := service.Context(ctx, s.w, s.thread, ops.ContextOptions{Budget: budget, Unlimited: in.Unlimited, TaskID: s.task})
	if err != nil {
		return reply{}, err
	}
	return reply{text: b.Text, data: b}, nil
}

var outTasks = &schema{Type: "object", Required: []string{"tasks"}}
