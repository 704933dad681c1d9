package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const validateUsage = `workspaced validate — check files against their schemas.

Usage:
  workspaced validate [--json] [PATH...]

Walks each PATH (a file or a directory; default the whole root), infers
each file's kind from its place in the tree (task.json, plan.json,
outputs/*.json, env entries, markers, skills/*.md, ...) and validates it
against the embedded schema (a skill: its front matter, and its body).
Temporary dot-files and .locks/ are passed over. A PATH
may be anywhere inside a workspace, or a workspace root itself: kinds are
computed relative to the root that holds it.

It also reports, with rule "skipped", every file and directory that a
listing (task list, env and memory list, thread list) or the daemon would
pass over, refuse or fail on, and why: an entry whose key does not match
its file name, names a field twice or whose name is not UTF-8; a file in
env/ not named <key>.json; a tasks/ entry that is a symlink or no task id;
a task directory without task.json, or holding only lock files; a thread
file the thread list fails on; an output no marker can name or the daemon
rejects; a dot-file that looks like a marker but is not one.

On a postgres:// or sqlite: root (and no PATH) it checks the workspace as
the tree 'workspaced export' would write, every document byte for byte in
its place, and names each problem by that place (tasks/t1/outputs/s1.json).

Prints "ok N files", or one line per problem:
  <path>: <JSON pointer>: <rule>: <message>
--json prints {"files": N, "invalid": M, "problems": [{path, pointer, rule, message}]}.

Examples:
  workspaced validate
  workspaced validate examples/workspace
  workspaced validate workspace/tasks/t1/plan.json --json

Exit codes: 0 all valid, 1 some file is invalid (or unreadable), 2 usage, 3 PATH not found.
`

// fileProblem is one problem of one file.
type fileProblem = service.Problem

// problemLine is the problem's line for people; a path an agent chose is
// quoted when it holds anything but printable UTF-8.
func problemLine(p fileProblem) string {
	return displayName(p.Path) + ": " + schemas.Problem{Pointer: p.Pointer, Rule: p.Rule, Message: p.Message}.String()
}

func cmdValidate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("validate")
	asJSON := fs.Bool("json", false, "print a JSON report")
	if err := parseArgs(e, fs, validateUsage, args); err != nil {
		return err
	}
	warn := func(p string) {
		fmt.Fprintf(e.stderr, "workspaced: warning: %s: not a file kind of the workspace tree; not checked\n", p)
	}
	rep, err := service.Validate(ctx, e.root, fs.Args(), warn)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else if len(rep.Problems) == 0 {
		fmt.Fprintf(e.stdout, "ok %d files\n", rep.Files)
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(e.stdout, problemLine(p))
		}
	}
	if rep.Invalid > 0 {
		hint := "see the schemas with 'workspaced schema KIND'"
		for _, p := range rep.Problems {
			if p.Rule == service.RuleSkipped {
				hint += "; what is skipped stays unread by every listing and by the daemon until it is fixed, renamed or removed"
				break
			}
		}
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "validate",
			Msg:  fmt.Sprintf("%d of %d files invalid (%d problems)", rep.Invalid, rep.Files, len(rep.Problems)),
			Hint: hint}
	}
	return nil
}
