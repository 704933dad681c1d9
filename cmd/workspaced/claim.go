package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
)

const claimUsage = `workspaced claim — take a subtask: drops tasks/<task>/.claim.<agent>.<suffix>.

Usage:
  workspaced claim (--task T | --thread X) --agent A --subtask S [--wait [DUR]] [--json]

The daemon applies claims in order: the first valid claim of a subtask wins,
a later one is refused with an event. Without --wait it prints the marker's
path and exits 0 at once: the daemon decides later. On a postgres:// root,
which has no paths, it prints the marker's name tasks/<task>/<marker>.

--wait waits for the daemon's verdict (at most DUR, default 1m; written
--wait, --wait 30s or --wait=30s) and exits by it: 0 won (the subtask is
yours, in_progress), 4 lost (another agent holds it, it is blocked, the plan
is not approved yet...: the reason is printed), 3 the approved plan has no
such subtask. With no daemon serving the root it exits 1 and drops nothing.
--json prints the verdict: {marker, marker_path, task_id, kind, verdict
(won, lost, not_found), seq, reason, subtask_id, subtask_status, worker,
task_status}.

A finished task (completed, failed, cancelled) takes no claim: exit 4, and
nothing is dropped.

Examples:
  workspaced claim --task t1 --agent worker_1 --subtask st_3
  WORKSPACE_AGENT=worker_2 workspaced claim --task t1 --subtask st_4 --wait
  workspaced claim --task t1 --agent worker_1 --subtask st_5 --wait 10s --json | jq -r .verdict
  if workspaced claim --task t1 --agent w1 --subtask st_3 --wait; then echo mine; fi

Exit codes: 0 ok (with --wait: won), 1 failure (bad id; with --wait: no daemon,
or no verdict within DUR), 2 usage, 3 task not found (with --wait: no such
subtask), 4 the task is finished (with --wait: lost).
`

func cmdClaim(ctx context.Context, e *env, args []string) error {
	fs := newFlags("claim")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	agent := fs.String("agent", "", "the claiming `AGENT` (default $WORKSPACE_AGENT)")
	subtask := fs.String("subtask", "", "subtask `ID`")
	var wait waitFlag
	fs.Var(&wait, "wait", "wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("claim", args)
	if err != nil {
		return err
	}
	if err := parse(e, fs, claimUsage, args); err != nil {
		return err
	}
	*agent = agentOr(*agent, "")
	if err := need(fs, "agent", "subtask"); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "claim", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	op := fmt.Sprintf("claim %s of task %s", *subtask, id)
	if err := service.BeforeMarker(ctx, w, op, id, wait.on); err != nil {
		return err
	}
	d, err := service.Claim(ctx, w, id, *agent, *subtask, wait.options())
	return reportMarker(e, op, id, d, err, wait, *asJSON)
}
