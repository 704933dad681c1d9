package main

import (
	"context"
	"fmt"
)

const claimUsage = `workspaced claim — take a subtask: drops tasks/<task>/.claim.<agent>.<suffix>.

Usage:
  workspaced claim (--task T | --thread X) --agent A --subtask S [--json]

The daemon applies claims in order: the first valid claim of a subtask wins,
a later one is refused with an event. Prints the marker's path.

Examples:
  workspaced claim --task t1 --agent worker_1 --subtask st_3
  WORKSPACE_AGENT=worker_2 workspaced claim --task t1 --subtask st_4
  workspaced claim --thread th_worker --agent worker_1 --subtask st_5 --json

Exit codes: 0 ok, 1 failure (bad id), 2 usage, 3 task not found.
`

func cmdClaim(ctx context.Context, e *env, args []string) error {
	fs := newFlags("claim")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	agent := fs.String("agent", "", "the claiming `AGENT` (default $WORKSPACE_AGENT)")
	subtask := fs.String("subtask", "", "subtask `ID`")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(e, fs, claimUsage, args); err != nil {
		return err
	}
	*agent = agentOr(*agent, "")
	if err := need(fs, "agent", "subtask"); err != nil {
		return err
	}
	w, id, err := e.openTask("claim", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	m, err := w.WriteClaim(id, *agent, *subtask)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]string{"marker": e.display(m)})
	}
	fmt.Fprintln(e.stdout, e.display(m))
	return nil
}
