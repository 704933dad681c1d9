// Package mcpserver serves a workspace to one agent over the Model Context
// Protocol: the universal capabilities as MCP tools — the task's shared
// env data, memory in three scopes, reading the task, its state, plan,
// subtasks, outputs and reviews, writing a plan or a review, claim, done,
// the delegation context and the system context — and a task's state and
// env manifest as resources. A server serves one agent (the agent every
// write is recorded as) and one task and thread of it, or every task the
// agent may reach, each call naming its own (reach.go); it reads and
// writes the tree only through package workspace, so what an MCP agent
// does is exactly what the CLI or an agent writing files would do.
//
// Everything a tool says is said to a model: a failed call is a tool
// error whose hint names the tool to call or the argument to change,
// never a command line.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// DefaultName is the implementation name the server reports to clients.
const DefaultName = "workspaced"

// DefaultVersion is reported when Options.Version is empty.
const DefaultVersion = "dev"

// Options bind a server to what it serves.
type Options struct {
	// TaskID is the task (root thread) served. Optional when ThreadID is
	// given: the thread's task is found by its record. With neither, the
	// session serves every task Grants covers (every task without
	// Grants), each call naming its task or thread (reach.go).
	TaskID string
	// ThreadID is the delegation thread the agent works in: the session
	// scope of the memory tools and the thread of get_delegation_context.
	// Default: the task's root thread (whose id is the task id).
	ThreadID string
	// Agent is the serving agent: stored_by of every entry, the owner of
	// the agent memory scope, the agent of claim and done markers, the
	// planner of its plans and the reviewer of its reviews. Required.
	Agent string
	// Version is reported to clients as the implementation version;
	// "" means DefaultVersion.
	Version string
	// Grants, when set, says for each call which grant its caller holds
	// (the entry of its token in the agents file, looked up again for
	// every call): the grant's agent must be Agent, its tasks must cover
	// the task, and a tool that needs a right or access to the global
	// memory is refused without it (permit.go). Nil: the host trusts its
	// one agent (stdio without a token), and nothing is checked.
	Grants func(extra *mcp.RequestExtra) (tokens.Grant, error)
	// Log receives one line for every refused call, naming the agent and
	// the reason. Nil: slog.Default().
	Log *slog.Logger
	// Verdicts is where the daemon's verdicts on the markers the tools
	// drop are read. Nil: where the store offers them (its file tree,
	// or the store itself on PostgreSQL).
	Verdicts workspace.VerdictSource
	// VerdictWait bounds how long a tool that dropped a marker waits for
	// the daemon's verdict. 0 means DefaultVerdictWait.
	VerdictWait time.Duration
	// Audit, when set, gets a record of every call: the tool, the agent,
	// the token's id, Remote, what it named and how it ended.
	Audit *audit.Log
	// TokenID is the id of the token the session runs on (stdio with a
	// token; over HTTP each call's own token is recorded).
	TokenID string
	// Remote is the client's address, for the audit.
	Remote string
}

// Server is one agent's MCP view of a workspace. Build it with New, serve
// it with Run (or connect its MCP server to any transport). Its handlers
// are safe for concurrent use: every write goes through the workspace's
// locks and atomic writer. The workspace must stay open while it serves.
//
// A Server is a session's identity — the task, thread and agent served,
// the grant it is checked against — and holds no tool of its own: the
// tools are built once and shared (host.go).
type Server struct {
	w        workspace.Store
	task     string
	thread   string
	agent    string
	grants   func(extra *mcp.RequestExtra) (tokens.Grant, error)
	log      *slog.Logger
	verdicts workspace.VerdictSource
	wait     time.Duration
	host     *host // New's own MCP server; nil for a session of HTTP
	audit    *audit.Log
	tokenID  string
	remote   string
}

// New checks the options against the tree — the ids are valid, the task
// exists, the thread belongs to it — and builds the server with every tool
// and resource registered. Errors are workspace errors (errors.Is with
// workspace.ErrInvalid or workspace.ErrNotFound) carrying a hint, and
// nothing is served.
func New(w workspace.Store, opt Options) (*Server, error) {
	s, err := newSession(context.Background(), w, opt)
	if err != nil {
		return nil, err
	}
	version := opt.Version
	if version == "" {
		version = DefaultVersion
	}
	s.host = newHost(version, s)
	return s, nil
}

// newSession checks the options as New does and returns the session they
// describe, without an MCP server.
func newSession(ctx context.Context, w workspace.Store, opt Options) (*Server, error) {
	if w == nil {
		return nil, errors.New("mcp server: no workspace")
	}
	if opt.Agent == "" {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp server", Msg: "no agent given",
			Hint: "name the serving agent in Options.Agent: it is recorded as stored_by of every write"}
	}
	if err := workspace.ValidateID("agent", opt.Agent); err != nil {
		return nil, err
	}
	var task, thread string
	if opt.TaskID != "" || opt.ThreadID != "" {
		var err error
		if task, thread, err = resolve(ctx, w, opt.TaskID, opt.ThreadID); err != nil {
			return nil, err
		}
	}
	s := &Server{w: w, task: task, thread: thread, agent: opt.Agent, grants: opt.Grants, log: opt.Log,
		verdicts: opt.Verdicts, wait: opt.VerdictWait, audit: opt.Audit, tokenID: opt.TokenID, remote: opt.Remote}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.verdicts == nil {
		s.verdicts = storeVerdicts(w)
	}
	if s.wait <= 0 {
		s.wait = DefaultVerdictWait
	}
	return s, nil
}

// resolve turns a task and/or thread into both: the thread's task when
// only the thread is given, the root thread when only the task is.
func resolve(ctx context.Context, w workspace.Store, task, thread string) (string, string, error) {
	switch {
	case task == "" && thread == "":
		return "", "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "mcp server", Msg: "no task or thread given",
			Hint: "name the task, the thread or both in Options"}
	case task == "":
		t, err := w.ResolveThread(ctx, thread)
		if err != nil {
			return "", "", err
		}
		return t, thread, nil
	}
	if _, err := w.GetTask(ctx, task); err != nil {
		return "", "", err
	}
	if thread == "" {
		thread = task
	}
	if _, err := w.GetThread(ctx, task, thread); err != nil {
		return "", "", err
	}
	return task, thread, nil
}

// Task is the task served.
func (s *Server) Task() string { return s.task }

// Thread is the thread served.
func (s *Server) Thread() string { return s.thread }

// Agent is the serving agent.
func (s *Server) Agent() string { return s.agent }

// MCP is the underlying go-sdk server, for connecting it to a transport
// other than with Run (an in-memory pair in tests, for instance).
func (s *Server) MCP() *mcp.Server { return s.host.mcp }

// Run serves one session over t until the client disconnects or ctx is
// done. A cancelled ctx is a clean stop and returns nil.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.host.mcp.Run(withSession(ctx, s), t)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}

// instructions is what the server tells a client at initialisation: whom
// it serves and how the tools fit together.
func (s *Server) instructions() string {
	var b strings.Builder
	if s.task == "" {
		fmt.Fprintf(&b, "This server is a shared workspace (workspaced). You are agent %q. No task is fixed: list_tasks shows the tasks you may work on, create_task makes one; name it as task (or your thread as thread) in every other tool.\n", s.agent)
	} else {
		fmt.Fprintf(&b, "This server is a shared workspace (workspaced). You are agent %q, working on task %q in thread %q.\n", s.agent, s.task, s.thread)
	}
	b.WriteString("Read the task with get_task; where it stands with get_task_state (status, plan_status, each subtask's status and worker, checkpoints); the plan with get_plan; one subtask with get_subtask; a subtask's result with get_output; reviews with list_reviews and get_review.\n")
	b.WriteString("A planner writes the plan with write_plan; a reviewer judges the plan or a checkpoint with write_review; a worker takes a subtask with claim_subtask and reports it with signal_done. Each waits for the workspace daemon's verdict and answers with it: won or applied, or a tool error saying why it was refused (another agent holds the subtask, it is blocked, ...). When no daemon serves, the answer says the marker is queued until one does: get_task_state shows the result then.\n")
	b.WriteString("Environment data (store_env_data, get_env_data, list_env_data, update_env_data, delete_env_data) is shared by every agent of the task: call list_env_data first to see what others stored.\n")
	b.WriteString("Memory (store_memory, get_memory, list_memory, delete_memory) is what you keep for later: scope agent is yours and lasts forever, session is this thread's, global is shared by every agent and task. It is not the task's state.\n")
	b.WriteString("Call get_delegation_context to see who called you, get_context for what your thread should see within a token budget, and list_capabilities for what you are and can do.\n")
	return b.String()
}

// toolError is a failed call's error with the hint a model needs: the
// tool to call or the argument to change, where the workspace's own hint
// speaks of the operation in general.
type toolError struct {
	err  error
	hint string
}

func (e *toolError) Error() string { return e.err.Error() }
func (e *toolError) Unwrap() error { return e.err }

// redirect gives err, when it is an error of the given kind, hint in
// place of its own; other errors pass unchanged.
func redirect(err, kind error, hint string) error {
	if err == nil || !errors.Is(err, kind) {
		return err
	}
	return &toolError{err: err, hint: hint}
}

// ErrorText is the text of a failed call: the error and, when a fix is
// known, a "hint: ..." line saying how to fix it — the tool to call, or
// the tool argument at fault; and when the machine is at fault (a full
// disk, a read-only filesystem, missing permissions, the open-files
// limit), a "hint: ..." line saying how to fix the machine.
func ErrorText(err error) string {
	s := err.Error()
	var te *toolError
	if errors.As(err, &te) {
		return s + "\nhint: " + te.hint
	}
	if errors.Is(err, workspace.ErrLocked) {
		return s + "\nhint: another agent is writing the same file; call the tool again in a moment"
	}
	if h := workspace.HintOf(err); h != "" {
		s += "\nhint: " + h
		if a := argumentFor(workspace.FieldOf(err)); a != "" {
			s += " (argument " + a + ")"
		}
	}
	if h := workspace.FaultHint(err); h != "" {
		s += "\nhint: " + h
	}
	return s
}

// argumentFor names the tool argument that sets the request field a
// workspace error names as at fault (workspace.FieldOf), or "" when no
// argument does.
func argumentFor(field string) string {
	switch field {
	case workspace.FieldDescription:
		return "short_description"
	case workspace.FieldValue:
		return "value"
	case workspace.FieldStatus:
		return "status"
	case workspace.FieldError:
		return "error"
	case workspace.FieldOutputFile:
		return "output_file"
	}
	return ""
}
