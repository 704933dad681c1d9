package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace/ops"
)

const systemContextUsage = `Usage:
  workspaced system-context --agent A [--task T] [--json]

Prints the "what am I" block for agent A, to append to its system prompt:
its name, description and role from config/agents.json, how it gets called
(by a human, or by another agent with a delegation preamble), its declared
capabilities and the universal ones every agent has, what it remembers (the
keys and descriptions of its own memory and of the global memory, never the
values, within 2 KiB; left out when its card sets "memory_in_context":
false), and with --task whether that task has env data. An agent without a
card gets the same block with "(no agent card)".

Examples:
  workspaced system-context --agent observer
  workspaced system-context --agent observer --task training-001
  workspaced system-context --agent observer --json | jq -r .text

Exit codes: 0 ok, 1 failure (bad agent name, unreadable agents.json), 2 usage,
3 no such task.
`

// systemContextOutput is the --json shape of system-context.
type systemContextOutput struct {
	Agent        string           `json:"agent"`
	Task         string           `json:"task,omitempty"`
	Text         string           `json:"text"`
	Capabilities []ops.Capability `json:"universal_capabilities"`
}

func cmdSystemContext(ctx context.Context, e *env, args []string) error {
	fs := newFlags("system-context")
	agent := fs.String("agent", "", "agent `NAME` (required)")
	task := fs.String("task", "", "task `ID`: say whether it has env data")
	asJSON := fs.Bool("json", false, "print the block and the universal capabilities as JSON")
	if err := parse(e, fs, systemContextUsage, args); err != nil {
		return err
	}
	if *agent == "" {
		return usageHint("system-context", "missing --agent A")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	text, err := service.SystemContext(ctx, w, *agent, *task)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, systemContextOutput{Agent: *agent, Task: *task, Text: text, Capabilities: ops.UniversalCapabilities})
	}
	_, err = fmt.Fprint(e.stdout, text)
	return err
}
