package main

import (
	"context"

	"github.com/workspaced/workspaced/service"
)

const taskCancelUsage = `Usage:
  workspaced task cancel (--task T | --thread X) [--reason TEXT] [--agent A] [--wait [DUR]] [--json]

Cancels the task: drops a done marker with status "cancelled" (and the
reason as its error), which the daemon applies like any other marker — it
is the only writer of state.json. The task then ends cancelled, whatever
it was doing: the state's status and phase become cancelled, completed_at
is set, every worker is available again, and a task_cancelled event names
the agent and the reason. A finished task (completed, failed, cancelled)
takes no more markers: claims and done markers for it are refused, and
retention prunes it like any finished task.

The agent recorded is --agent, else $WORKSPACE_AGENT, else "human". Without
--wait it prints the marker's path and exits 0 at once; --wait waits for the
daemon's verdict (at most DUR, default 1m) as 'workspaced done --wait'
does, and --json prints it.

Examples:
  workspaced task cancel --task t1 --reason "the requirement was dropped"
  workspaced task cancel --task t1 --reason "superseded by t2" --wait
  workspaced task cancel --thread th_worker --agent coordinator --wait 10s --json | jq -r .verdict

Exit codes: 0 ok (with --wait: applied), 1 failure (with --wait: no daemon, or
no verdict within DUR), 2 usage, 3 task not found, 4 the task is already
finished (nothing is dropped; with --wait: refused).
`

func taskCancel(ctx context.Context, e *env, args []string) error {
	fs := newFlags("task cancel")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (cancels its task)")
	reason := fs.String("reason", "", "why the task is cancelled (`TEXT`)")
	agent := fs.String("agent", "", "who cancels it, an `AGENT` (default $WORKSPACE_AGENT, else \"human\")")
	var wait waitFlag
	fs.Var(&wait, "wait", "wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("task cancel", args)
	if err != nil {
		return err
	}
	if err := parse(e, fs, taskCancelUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "task cancel", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.GetTask(ctx, id); err != nil {
		return err
	}
	op := "cancel task " + id
	if err := service.BeforeMarker(ctx, w, op, id, wait.on); err != nil {
		return err
	}
	d, err := service.Cancel(ctx, w, id, agentOr(*agent, "human"), *reason, wait.options())
	return reportMarker(e, op, id, d, err, wait, *asJSON)
}
