package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace/ops"
)

const preambleUsage = `Usage:
  workspaced preamble --thread X [--task T] [--detail minimal|standard|verbose]
                      [--for cli|mcp|http|files] [--max-message-bytes N] [--json]

Prints the delegation preamble the agent of thread X (its "to") receives
before the message: who called it, what the caller is, the delegation chain,
the task context, and, when the task has env data, how to list it in the
calls of the door the agent uses (--for, default cli): 'workspaced env list'
for an agent that runs the CLI, list_env_data() for an MCP agent, GET
/api/v1/tasks/T/env for a program of the HTTP API, tasks/T/env/ for one
that reads the files. Prepend it to the thread's message.

Detail levels (default: the called agent's card preamble_detail, else standard):
  minimal   called by, delegation chain
  standard  + what the caller is (its card's description), the task context
            (the root message, cut to --max-message-bytes with "…", and the
            caller's latest step: its thread's progress, else its approach,
            cut the same way), the env hint
  verbose   + the message that delegated to the caller, the caller's declared
            capabilities, this thread's concern and approach

The preamble is empty — nothing printed, exit 0 — for a thread started by a
human (the root thread, or from "human" or the task's submitter) and for an
agent whose card sets "delegation_context": false. With --json the result is
always printed, with "empty" and "reason".

Examples:
  workspaced preamble --thread th_observer
  workspaced preamble --thread th_observer --detail verbose
  workspaced preamble --thread th_observer --for mcp
  workspaced preamble --thread th_observer --json | jq -r .text

Exit codes: 0 ok (also when empty), 1 failure (a cycle in the parent
pointers, a bad card file), 2 usage, 3 no such thread or task, or a parent
that is not in the thread's task.
`

func cmdPreamble(ctx context.Context, e *env, args []string) error {
	fs := newFlags("preamble")
	thread := fs.String("thread", "", "thread `ID` (required)")
	task := fs.String("task", "", "task `ID` of the thread (skips looking for it)")
	detail := fs.String("detail", "", "how much to say, `minimal|standard|verbose` (default: the agent's card, else standard)")
	maxMsg := fs.Int("max-message-bytes", ops.DefaultPreambleMessageBytes, "cut each quoted message to `N` bytes")
	surface := fs.String("for", string(ops.SurfaceCLI), "the door the agent uses, `cli|mcp|http|files`: the calls the preamble names")
	asJSON := fs.Bool("json", false, "print the preamble and its parts as JSON")
	if err := parse(e, fs, preambleUsage, args); err != nil {
		return err
	}
	if *thread == "" {
		return usageHint("preamble", "missing --thread X")
	}
	if _, err := ops.ParseDetail(*detail); err != nil {
		return usageHint("preamble", "--detail %q: use minimal, standard or verbose", *detail)
	}
	if *maxMsg <= 0 {
		return usageHint("preamble", "--max-message-bytes must be positive")
	}
	sf, err := ops.ParseSurface(*surface)
	if err != nil || *surface == "" {
		return usageHint("preamble", "--for %q: use cli, mcp, http or files", *surface)
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	p, err := service.Preamble(ctx, w, *thread, ops.PreambleOptions{Detail: *detail, MaxMessageBytes: *maxMsg, TaskID: *task, Surface: sf})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, p)
	}
	_, err = fmt.Fprint(e.stdout, p.Text)
	return err
}
