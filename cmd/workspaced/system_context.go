package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace/ops"
)

const systemContextUsage = `Usage:
  workspaced system-context --agent A [--task T] [--for cli|mcp|http|files] [--json]

Prints the "what am I" block for agent A, to append to its system prompt:
its name, description and role from config/agents.json, how it gets called
(by a human, or by another agent with a delegation preamble), its declared
capabilities and the universal ones every agent has, what it remembers (the
keys and descriptions of its own memory and of the global memory, never the
values, within 2 KiB; left out when its card sets "memory_in_context":
false), and with --task whether that task has env data. An agent without a
card gets the same block with "(no agent card)".

The block names the calls of the door the agent uses (--for, default cli):
commands such as 'workspaced env list --task T' for an agent that runs the
CLI, the tools (list_env_data) for an MCP agent, routes such as GET
/api/v1/tasks/T/env for a program of the HTTP API, and for one that reads
the files their paths (tasks/T/env/), with the CLI for what it writes. A
call the door does not have is not listed.

Examples:
  workspaced system-context --agent observer
  workspaced system-context --agent observer --task training-001
  workspaced system-context --agent observer --for mcp
  workspaced system-context --agent observer --json | jq -r .text

Exit codes: 0 ok, 1 failure (bad agent name, unreadable agents.json), 2 usage,
3 no such task.
`

// systemContextOutput is the --json shape of system-context.
type systemContextOutput struct {
	Agent        string           `json:"agent"`
	Task         string           `json:"task,omitempty"`
	Text         string           `json:"text"`
	For          ops.Surface      `json:"for"`
	Capabilities []capabilityCall `json:"universal_capabilities"`
}

// capabilityCall is a universal capability (its MCP tool's name) with its
// call on the door the block was asked for.
type capabilityCall struct {
	Name        string `json:"name"`
	Call        string `json:"call"`
	Description string `json:"description"`
}

func cmdSystemContext(ctx context.Context, e *env, args []string) error {
	fs := newFlags("system-context")
	agent := fs.String("agent", "", "agent `NAME` (required)")
	task := fs.String("task", "", "task `ID`: say whether it has env data")
	surface := fs.String("for", string(ops.SurfaceCLI), "the door the agent uses, `cli|mcp|http|files`: the calls the block names")
	asJSON := fs.Bool("json", false, "print the block and the universal capabilities as JSON")
	if err := parse(e, fs, systemContextUsage, args); err != nil {
		return err
	}
	if *agent == "" {
		return usageHint("system-context", "missing --agent A")
	}
	sf, err := ops.ParseSurface(*surface)
	if err != nil || *surface == "" {
		return usageHint("system-context", "--for %q: use cli, mcp, http or files", *surface)
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	text, err := service.SystemContext(ctx, w, *agent, *task, sf)
	if err != nil {
		return err
	}
	if *asJSON {
		out := systemContextOutput{Agent: *agent, Task: *task, Text: text, For: sf, Capabilities: []capabilityCall{}}
		for _, c := range ops.UniversalCapabilities {
			if call := ops.Call(sf, c.Name, *task, *agent); call != "" {
				out.Capabilities = append(out.Capabilities, capabilityCall{c.Name, call, c.Description})
			}
		}
		return printJSON(e.stdout, out)
	}
	_, err = fmt.Fprint(e.stdout, text)
	return err
}
