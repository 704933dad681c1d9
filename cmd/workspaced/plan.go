package main

import (
	"context"
	"fmt"
	"path"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const planUsage = `workspaced plan — write a new version of a task's plan (tasks/<task>/plan.json).

Usage:
  workspaced plan write (--task T | --thread X) --file F|- [--agent A] [--propose [--wait [DUR]]] [--json]
  workspaced plan amend (--task T | --thread X) [--add ID=DESCRIPTION]... [--after IDS] [--withdraw ID]... [--file F|-] [--wait [DUR]]

The file holds the plan (a JSON object with at least "subtasks"). The
workspace fills version (the next one), task_id, and, when missing, id,
created_at and created_by; the previous plan.json is kept as
plans/plan_v<N>.json. --propose also drops the done marker that proposes
plan.json to the daemon. Prints the path written (and the marker's); on a
postgres:// root, the names tasks/<task>/plan.json (and tasks/<task>/<marker>).
With --propose, --wait waits for the daemon's verdict (at most DUR, default
1m) and exits by it, as 'workspaced done --wait' does: 0 applied, 4 refused
(the reason is printed), 1 no daemon or no verdict within DUR.
Once a plan is approved it is never replaced, and a write is refused
before anything is written: amend it (plan amend --help).

Examples:
  workspaced plan write --task t1 --file plan.json --agent planner
  workspaced plan write --task t1 --file plan.json --agent planner --propose
  workspaced plan write --task t1 --file plan.json --agent planner --propose --wait 30s
  generate-plan | workspaced plan write --task t1 --file - --json

Exit codes: 0 ok (with --wait: applied), 1 failure (not JSON, schema-invalid
plan; with --wait: no daemon, or no verdict within DUR), 2 usage, 3 task not
found, 4 lock timeout, the plan is approved or the task finished (with
--wait: refused).
`

func cmdPlan(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "plan", planUsage, []subcommand{
		{"write", "write plan.json as a new version", planWrite},
		{"amend", "amend the running plan: add subtasks, change or withdraw pending ones", planAmend},
	}, args)
}

// written is what plan, output and review write print with --json.
type written struct {
	Path    string `json:"path"`
	Version int    `json:"version,omitempty"`
	Marker  string `json:"marker,omitempty"`
}

func planWrite(ctx context.Context, e *env, args []string) error {
	fs := newFlags("plan write")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	file := fs.String("file", "", "read the plan from `FILE` ('-' for stdin)")
	agent := fs.String("agent", "", "the planning `AGENT` (default $WORKSPACE_AGENT, else \"cli\")")
	propose := fs.Bool("propose", false, "also drop the done marker that proposes the plan")
	var wait waitFlag
	fs.Var(&wait, "wait", "with --propose, wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("plan write", args)
	if err != nil {
		return err
	}
	if err := parseNeeding(e, fs, planUsage, args, "file"); err != nil {
		return err
	}
	if wait.on && !*propose {
		return usageHint("plan write", "--wait goes with --propose: without a marker there is no verdict to wait for")
	}
	data, err := readInput(e, *file)
	if err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "plan write", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	who := agentOr(*agent, "cli")
	var out written
	write := func(ctx context.Context) (string, error) {
		p, err := service.WritePlan(ctx, w, id, who, data)
		if err != nil {
			return "", err
		}
		out.Version = p.Version
		return "plan.json", nil
	}
	var done *workspace.DoneRequest
	if *propose {
		done = &workspace.DoneRequest{TaskID: id, Agent: who}
	}
	return finishProduct(ctx, e, w, id, write, done, wait, *asJSON, &out)
}

// finishProduct writes a product with write (which returns its path
// relative to the task directory) and, when done is set, drops the done
// marker that reports it (service.Deliver fills done's OutputFile), then
// prints where it went. With wait on, it waits for the daemon's verdict on
// the marker and exits by it, as claim and done do.
func finishProduct(ctx context.Context, e *env, w workspace.Store, taskID string, write func(context.Context) (string, error), done *workspace.DoneRequest, wait waitFlag, asJSON bool, out *written) error {
	rel := ""
	if done == nil {
		var err error
		if rel, err = write(ctx); err != nil {
			return err
		}
	} else {
		op := "done of task " + taskID
		if err := service.BeforeMarker(ctx, w, op, taskID, wait.on); err != nil {
			return err
		}
		d, err := service.Deliver(ctx, w, *done, write, wait.options())
		if wait.on {
			if d.Product != "" && !asJSON {
				fmt.Fprintln(e.stdout, e.display(path.Join(workspace.TaskDir(taskID), d.Product)))
			}
			return reportMarker(e, "done "+d.Product+" of task "+taskID, taskID, d, err, wait, asJSON)
		}
		if err != nil {
			return err
		}
		rel = d.Product
		out.Marker = e.displayMarker(taskID, d.Marker)
	}
	out.Path = e.display(path.Join(workspace.TaskDir(taskID), rel))
	return printProduct(e, asJSON, *out)
}

// printProduct prints where a product went: the path, the marker if one
// was dropped.
func printProduct(e *env, asJSON bool, out written) error {
	if asJSON {
		return printJSON(e.stdout, out)
	}
	fmt.Fprintln(e.stdout, out.Path)
	if out.Marker != "" {
		fmt.Fprintln(e.stdout, out.Marker)
	}
	return nil
}
