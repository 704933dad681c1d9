package main

import (
	"context"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const doneUsage = `workspaced done — finish something: drops tasks/<task>/.done.<agent>.<suffix>.

Usage:
  workspaced done (--task T | --thread X) --agent A --output PATH [--subtask S]
                  [--status completed|failed|cancelled] [--error TEXT] [--escalate TEXT]
                  [--wait [DUR]] [--json]

PATH is relative to the task directory: plan.json, outputs/<subtask>.json
or reviews/<id>.json; it must exist and match its schema. --status failed
needs --error; --status cancelled may omit --output (it cancels the task;
see also 'workspaced task cancel'). Without --wait it prints the marker's
path and exits 0 at once: the daemon applies it later. On a postgres://
root, which has no paths, it prints the marker's name tasks/<task>/<marker>.

--wait waits for the daemon's verdict (at most DUR, default 1m; written
--wait, --wait 30s or --wait=30s) and exits by it: 0 applied, 4 refused
(the subtask is another agent's or already completed, the plan is not
awaiting review...: the reason is printed), 3 the approved plan has no such
subtask. With no daemon serving the root it exits 1 and drops nothing.
--json prints the verdict: {marker, marker_path, task_id, kind, verdict
(applied, refused, not_found), seq, reason, subtask_id, subtask_status,
worker, task_status}.

A finished task (completed, failed, cancelled) takes no marker: exit 4, and
nothing is dropped.

Examples:
  workspaced done --task t1 --agent worker_1 --output outputs/st_3.json
  workspaced done --task t1 --agent planner --output plan.json --wait
  workspaced done --task t1 --agent worker_1 --output outputs/st_3.json --status failed --error "tests fail"
  workspaced done --task t1 --agent worker_1 --output outputs/st_3.json --wait 10s --json | jq -r .verdict

Exit codes: 0 ok (with --wait: applied), 1 failure (bad marker, missing or
invalid product; with --wait: no daemon, or no verdict within DUR), 2 usage,
3 task not found (with --wait: no such subtask), 4 the task is finished
(with --wait: refused).
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
	var wait waitFlag
	fs.Var(&wait, "wait", "wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("done", args)
	if err != nil {
		return err
	}
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
	w, id, err := e.openTask(ctx, "done", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	req.TaskID = id
	op := "done " + req.OutputFile + " of task " + id
	if req.OutputFile == "" {
		op = "done (" + req.Status + ") of task " + id
	}
	if err := service.BeforeMarker(ctx, w, op, id, wait.on); err != nil {
		return err
	}
	d, err := service.Deliver(ctx, w, req, nil, wait.options())
	return reportMarker(e, op, id, d, err, wait, *asJSON)
}
