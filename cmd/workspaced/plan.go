package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

const planUsage = `workspaced plan — write a new version of a task's plan (tasks/<task>/plan.json).

Usage:
  workspaced plan write (--task T | --thread X) --file F|- [--agent A] [--propose] [--json]

The file holds the plan (a JSON object with at least "subtasks"). The
workspace fills version (the next one), task_id, and, when missing, id,
created_at and created_by; the previous plan.json is kept as
plans/plan_v<N>.json. --propose also drops the done marker that proposes
plan.json to the daemon. Prints the path written (and the marker's).

Examples:
  workspaced plan write --task t1 --file plan.json --agent planner
  workspaced plan write --task t1 --file plan.json --agent planner --propose
  generate-plan | workspaced plan write --task t1 --file - --json

Exit codes: 0 ok, 1 failure (not JSON, schema-invalid plan), 2 usage,
3 task not found, 4 lock timeout.
`

func cmdPlan(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "plan", planUsage, []subcommand{
		{"write", "write plan.json as a new version", planWrite},
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
	if err := parse(e, fs, planUsage, args); err != nil {
		return err
	}
	if err := need(fs, "file"); err != nil {
		return err
	}
	data, err := readInput(e, *file)
	if err != nil {
		return err
	}
	w, err := e.open()
	if err != nil {
		return err
	}
	defer w.Close()
	id, err := resolveTask(w, "plan write", *task, *thread)
	if err != nil {
		return err
	}
	who := agentOr(*agent, "cli")
	if err := precheckPlan(w, id, who, data); err != nil {
		return err
	}
	p, err := w.WritePlan(ctx, id, who, data)
	if err != nil {
		return err
	}
	out := written{Path: e.display(path.Join(workspace.TaskDir(id), "plan.json")), Version: p.Version}
	if *propose {
		m, err := w.WriteDone(workspace.DoneRequest{TaskID: id, Agent: who, OutputFile: "plan.json"})
		if err != nil {
			return fmt.Errorf("plan v%d written, but proposing it failed: %w", p.Version, err)
		}
		out.Marker = e.display(m)
	}
	return printProduct(e, *asJSON, out)
}

// precheckPlan validates the plan as WritePlan will write it before
// WritePlan runs: WritePlan copies the current plan to plans/ before it
// validates the new one, so a schema-invalid plan would otherwise leave
// that copy behind.
func precheckPlan(w *workspace.Workspace, taskID, agent string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil // WritePlan reports it, before writing anything
	}
	m["version"] = 1
	m["task_id"] = taskID
	if _, ok := m["id"]; !ok {
		m["id"] = "plan_" + taskID
	}
	if _, ok := m["created_at"]; !ok {
		m["created_at"] = w.Now().Format(workspace.TimeFormat)
	}
	if _, ok := m["created_by"]; !ok {
		m["created_by"] = agent
	}
	full, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	if err := schemas.Validate(schemas.KindPlan, full); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "validate plan", Err: err,
			Hint: "see the schema with 'workspaced schema plan'"}
	}
	return nil
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
