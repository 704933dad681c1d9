package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

const doneUsage = `workspaced done — finish something: drops tasks/<task>/.done.<agent>.<suffix>.

Usage:
  workspaced done (--task T | --thread X) --agent A --output PATH [--subtask S]
                  [--status completed|failed|cancelled] [--error TEXT] [--escalate TEXT] [--json]

PATH is relative to the task directory: plan.json, outputs/<subtask>.json
or reviews/<id>.json; it must exist and match its schema. --status failed
needs --error; --status cancelled may omit --output. Prints the marker's path.

Examples:
  workspaced done --task t1 --agent worker_1 --output outputs/st_3.json
  workspaced done --task t1 --agent planner --output plan.json
  workspaced done --task t1 --agent worker_1 --output outputs/st_3.json --status failed --error "tests fail"

Exit codes: 0 ok, 1 failure (bad marker, missing or invalid product), 2 usage, 3 task not found.
`

func cmdDone(ctx context.Context, e *env, args []string) error {
	fs := newFlags("done")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	var req workspace.DoneRequest
	fs.StringVar(&req.Agent, "agent", "", "the finishing `AGENT` (default $WORKSPACE_AGENT)")
	fs.StringVar(&req.OutputFile, "output", "", "the product, `PATH` relative to the task directory")
	fs.StringVar(&req.SubtaskID, "subtask", "", "subtask `ID` (default: from outputs/<id>.json)")
	fs.StringVar(&req.Status, "status", "", "the outcome, `completed|failed|cancelled` (default completed)")
	fs.StringVar(&req.Error, "error", "", "why it failed (`TEXT`)")
	fs.StringVar(&req.Escalate, "escalate", "", "hand the decision to a human, saying why (`TEXT`)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(e, fs, doneUsage, args); err != nil {
		return err
	}
	req.Agent = agentOr(req.Agent, "")
	if err := need(fs, "agent"); err != nil {
		return err
	}
	if req.OutputFile == "" && req.Status != "cancelled" {
		return usageHint("done", "missing --output (plan.json, outputs/<subtask>.json or reviews/<id>.json)")
	}
	switch req.Status {
	case "", "completed", "failed", "cancelled":
	default:
		return usageHint("done", "--status must be completed, failed or cancelled, not %q", req.Status)
	}
	w, id, err := e.openTask("done", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	req.TaskID = id
	m, err := w.WriteDone(req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, map[string]string{"marker": e.display(m)})
	}
	fmt.Fprintln(e.stdout, e.display(m))
	return nil
}
