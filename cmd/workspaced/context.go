package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace/ops"
)

const contextUsage = `Usage:
  workspaced context (--thread X [--task T] | --agent A) [--budget TOKENS | --unlimited] [--json]

Assembles what the agent of thread X should see (docs/CONTEXT.md), in
priority order:
  1. the thread hydrated: its chain, message, concern, approach, progress
     and the contents of its buffers (env:<key>, memory:<scope>:<key>,
     or a file inside the task directory)
  2. its skills (skills/<name>.md): core, the ones the agent's card names,
     those of the thread's primary mode and those its skill tags meet
  3. the agent's global buffers from its card
  4. the task's other open threads dehydrated (concern, approach, progress)
  5. the env manifest (keys and descriptions, never values)
Items are taken in that order while they fit the budget; tokens are
estimated at 4 bytes each. Whatever was left out — over budget, missing,
or refused (outside the task, a symlink, a FIFO, over 256 KiB, not text, a
broken skill) — is listed at the end of the text under "Left out", and in
"omitted" with --json. The same tree always prints the same bytes.

With --agent A instead of --thread, the thread is A's active thread (the
one 'workspaced thread activate' made active last), and A's open threads
of other tasks are summarised too.

Examples:
  workspaced context --thread th_observer
  workspaced context --thread th_observer --budget 2000
  workspaced context --agent observer
  workspaced context --thread th_observer --json | jq '.omitted'

Exit codes: 0 ok (also when items were left out), 1 failure (a cycle in
the parent pointers, a bad card file), 2 usage, 3 no such thread or task, a
parent that is not in the thread's task, or no active thread of the agent.
`

func cmdContext(ctx context.Context, e *env, args []string) error {
	fs := newFlags("context")
	thread := fs.String("thread", "", "thread `ID` (or --agent)")
	task := fs.String("task", "", "task `ID` of the thread (skips looking for it)")
	agent := fs.String("agent", "", "assemble the active thread of `AGENT` (instead of --thread)")
	budget := fs.Int("budget", ops.DefaultContextBudget, "token budget (`TOKENS`, 4 bytes each); 0 includes nothing")
	unlimited := fs.Bool("unlimited", false, "include everything readable, whatever its size")
	asJSON := fs.Bool("json", false, "print the bundle (sections, items, omissions, text) as JSON")
	if err := parse(e, fs, contextUsage, args); err != nil {
		return err
	}
	switch {
	case *thread == "" && *agent == "":
		return usageHint("context", "missing --thread X (or --agent A)")
	case *thread != "" && *agent != "":
		return usageHint("context", "give --thread or --agent, not both")
	case *agent != "" && *task != "":
		return usageHint("context", "--task goes with --thread; --agent finds the task itself")
	}
	if *budget < 0 {
		return usageHint("context", "--budget must be 0 or more tokens")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	b, err := service.Context(ctx, w, *thread, ops.ContextOptions{Budget: *budget, Unlimited: *unlimited, TaskID: *task, Agent: *agent})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, b)
	}
	_, err = fmt.Fprint(e.stdout, b.Text)
	return err
}
