package main

import (
	"context"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

const schemaUsage = `workspaced schema — print the JSON Schema (draft 2020-12) of a file kind.

Usage:
  workspaced schema KIND
  workspaced schema --list

The schemas are embedded in the binary; agents in other languages validate
their files with them.

Examples:
  workspaced schema --list
  workspaced schema entry > entry.schema.json
  workspaced schema plan | jq .required

Exit codes: 0 ok, 2 usage, 3 unknown kind.
`

func cmdSchema(ctx context.Context, e *env, args []string) error {
	fs := newFlags("schema")
	list := fs.Bool("list", false, "list the kinds and the files they describe")
	if err := parseArgs(e, fs, schemaUsage, args); err != nil {
		return err
	}
	if *list {
		if fs.NArg() > 0 {
			return usageHint("schema", "--list takes no KIND")
		}
		rows := [][]string{}
		for _, k := range schemas.Kinds() {
			rows = append(rows, []string{string(k), kindFiles[k]})
		}
		table(e.stdout, []string{"KIND", "FILES"}, rows)
		return nil
	}
	if fs.NArg() != 1 {
		return usageHint("schema", "give one KIND (see 'workspaced schema --list')")
	}
	k, err := schemas.ParseKind(fs.Arg(0))
	if err != nil {
		return notFound("schema "+fs.Arg(0), "list the kinds with 'workspaced schema --list'", err)
	}
	_, err = e.stdout.Write(schemas.Source(k))
	return err
}

// kindFiles says, for `schema --list`, which files a kind describes.
var kindFiles = map[schemas.Kind]string{
	schemas.KindWorkspace: "workspace.json",
	schemas.KindAgents:    "config/agents.json",
	schemas.KindTask:      "tasks/<id>/task.json",
	schemas.KindPlan:      "tasks/<id>/plan.json, plans/plan_v<N>.json",
	schemas.KindState:     "tasks/<id>/state.json, backups/state_*.json",
	schemas.KindOutput:    "tasks/<id>/outputs/<subtask>.json",
	schemas.KindReview:    "tasks/<id>/reviews/<review>.json",
	schemas.KindEntry:     "env/, sessions/<thread>/, memory/global/, memory/agents/<agent>/ <key>.json",
	schemas.KindThread:    "tasks/<id>/threads/<thread>.json",
	schemas.KindClaim:     "tasks/<id>/.claim.<agent>[.<suffix>]",
	schemas.KindDone:      "tasks/<id>/.done.<agent>[.<suffix>]",
	schemas.KindFriction:  "friction/friction.json",
	schemas.KindJournal:   "tasks/<id>/journal/<seq>.json, journal/<first>-<last>.json",
	schemas.KindSkill:     "skills/<name>.md (its front matter)",
}

// notFound wraps err as a not-found error (exit 3) with a hint.
func notFound(op, hint string, err error) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Err: err, Hint: hint}
}
