package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/mcpserver"
)

const mcpUsage = `workspaced mcp — serve the workspace to one agent over the Model Context
Protocol, on stdin/stdout (newline-delimited JSON-RPC). An MCP client (an LLM
agent runtime) launches this command and gets the universal capabilities as
tools — env data: store_env_data, get_env_data, list_env_data,
update_env_data, delete_env_data; memory: store_memory, get_memory,
list_memory, delete_memory; the task's work: get_task, get_task_state,
get_plan, get_subtask, get_output, list_reviews, get_review, write_plan,
write_review, claim_subtask, signal_done; context: get_delegation_context,
list_capabilities, skills — and the task's state and env manifest as resources
(workspace://tasks/T/state, workspace://tasks/T/env).

Usage:
  workspaced [--root DIR] mcp (--task T | --thread X | --task T --thread X) --agent A

--thread alone finds its task; --task alone serves the task's root thread.
--agent (or $WORKSPACE_AGENT) is the serving agent: stored_by of every entry,
the owner of the agent memory scope, the agent of every marker it drops (a
plan it proposes, a review, a claim, a done report).
The ids are checked before serving; nothing is read from stdin until then.
A log line goes to stderr; stdout carries only the protocol. Plans, reviews,
claims and done reports are applied to the task's state by the daemon
(workspaced serve): run one on the same root.

Examples:
  workspaced --root ./workspace mcp --task t1 --thread th_observer --agent observer
  workspaced mcp --thread th_solver --agent solver
  workspaced mcp --task t1 --agent planner      # a planner's server; a reviewer gets its own

Exit codes: 0 the client disconnected (or SIGINT/SIGTERM), 1 failure (a bad id),
2 usage, 3 task or thread not found.
`

func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags("mcp")
	task := fs.String("task", "", "task `ID` (optional with --thread)")
	thread := fs.String("thread", "", "thread `ID` (default: the task's root thread)")
	agent := fs.String("agent", "", "the serving `AGENT` (default $WORKSPACE_AGENT)")
	if err := parse(e, fs, mcpUsage, args); err != nil {
		return err
	}
	*agent = agentOr(*agent, "")
	if *agent == "" {
		return usageHint("mcp", "missing --agent A (the agent this server acts for)")
	}
	if *task == "" && *thread == "" {
		return usageHint("mcp", "missing --task T or --thread X")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	s, err := mcpserver.New(w, mcpserver.Options{TaskID: *task, ThreadID: *thread, Agent: *agent, Version: version})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "workspaced mcp: serving task %s, thread %s, as agent %s (root %s) on stdio\n", s.Task(), s.Thread(), s.Agent(), e.root)
	return s.Run(ctx, &mcp.IOTransport{Reader: readCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
}

// readCloser lets closing the transport close stdin when it is a file, so
// a stop on SIGINT does not wait for a read that never returns.
func readCloser(r io.Reader) io.ReadCloser {
	if f, ok := r.(*os.File); ok {
		return f
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
