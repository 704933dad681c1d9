package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

const contextUsage = `Usage:
  workspaced context --thread X [--task T] [--budget TOKENS | --unlimited] [--json]

Assembles what the agent of thread X should see (docs/CONTEXT.md), in
priority order:
  1. the thread hydrated: its chain, message, concern, approach, progress
     and the contents of its buffers (env:<key>, memory:<scope>:<key>,
     or a file inside the task directory)
  2. the agent's global buffers from its card
  3. the task's other open threads dehydrated (concern, approach, progress)
  4. the env manifest (keys and descriptions, never values)
Items are taken in that order while they fit the budget; tokens are
estimated at 4 bytes each. Whatever was left out — over budget, missing,
or refused (outside the task, a symlink, a FIFO, over 256 KiB, not text) —
is listed at the end of the text under "Left out", and in "omitted" with
--json. The same tree always prints the same bytes.

Examples:
  workspaced context --thread th_observer
  workspaced context --thread th_observer --budget 2000
  workspaced context --thread th_observer --json | jq '.omitted'

Exit codes: 0 ok (also when items were left out), 1 failure (a cycle in
the parent pointers, a bad card file), 2 usage, 3 no such thread or task, or
a parent that is not in the thread's task.
`

func cmdContext(ctx context.Context, e *env, args []string) error {
	fs := newFlags("context")
	thread := fs.String("thread", "", "thread `ID` (required)")
	task := fs.String("task", "", "task `ID` of the thread (skips looking for it)")
	budget := fs.Int("budget", workspace.DefaultContextBudget, "token budget (`TOKENS`, 4 bytes each); 0 includes nothing")
	unlimited := fs.Bool("unlimited", false, "include everything readable, whatever its size")
	asJSON := fs.Bool("json", false, "print the bundle (sections, items, omissions, text) as JSON")
	if err := parse(e, fs, contextUsage, args); err != nil {
		return err
	}
	if *thread == "" {
		return usageHint("context", "missing --thread X")
	}
	if *budget < 0 {
		return usageHint("context", "--budget must be 0 or more tokens")
	}
	w, err := e.open()
	if err != nil {
		return err
	}
	defer w.Close()
	b, err := w.Context(*thread, workspace.ContextOptions{Budget: *budget, Unlimited: *unlimited, TaskID: *task})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, b)
	}
	_, err = fmt.Fprint(e.stdout, b.Text)
	return err
}
