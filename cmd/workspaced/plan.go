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
  workspaced plan write (--task T | --thread X) --file F|- [--agent A] [--propose] [--json]
  workspaced plan amend (--task T | --thread X) [--add ID=DESCRIPTION]... [--after IDS] [--withdraw ID]... [--file F|-] [--wait [DUR]]

The file holds the plan (a JSON object with at least "subtasks"). The
workspace fills version (the next one), task_id, and, when missing, id,
created_at and created_by; the previous plan.json is kept as
plans/plan_v<N>.json. --propose also drops the done marker that proposes
plan.json to the daemon. Prints the path written (and the marker's); on a
postgres:// root, the names tasks/<task>/plan.json (and tasks/<task>/<marker>).
Once a plan is approved it is never replaced, and a write is refused
before anything is written: amend it (plan amend --help).

Examples:
  workspaced plan write --task t1 --file plan.json --agent planner
  workspaced plan write --task t1 --file plan.json --agent planner --propose
  generate-plan | workspaced plan write --task t1 --file - --json

Exit codes: 0 ok, 1 failure (not JSON, schema-invalid plan), 2 usage,
3 task not found, 4 lock timeout, or the plan is approved or the task finished.
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
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseNeeding(e, fs, planUsage, args, "file"); err != nil {
		return err
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
	return finishProduct(ctx, e, w, id, write, done, *asJSON, &out)
}

// finishProduct writes a product with write (which returns its path
// relative to the task directory) and, when done is set, drops the done
// marker that reports it (service.Deliver fills done's OutputFile), then
// prints where it went.
func finishProduct(ctx context.Context, e *env, w workspace.Store, taskID string, write func(context.Context) (string, error), done *workspace.DoneRequest, asJSON bool, out *written) error {
	rel := ""
	if done == nil {
		var err error
		if rel, err = write(ctx); err != nil {
			return err
		}
	} else {
		d, err := service.Deliver(ctx, w, *done, write, service.DeliverOptions{})
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
