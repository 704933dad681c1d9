package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

const initUsage = `workspaced init — create a workspace (safe to run twice).

Usage:
  workspaced [--root DIR] init

Creates the root (--root, else $WORKSPACE_ROOT, else ./workspace) with
workspace.json (every default written out), config/agents.json,
friction/friction.json, memory/, tasks/ and a .gitignore that keeps lock
files, temporary files and the daemon's lock out of git, so that
'git init && git add -A' in the root records the tree and nothing else.
Files that exist are left alone.

Examples:
  workspaced init
  workspaced --root /srv/agents/ws init
  WORKSPACE_ROOT=$PWD/ws workspaced init

Exit codes: 0 ok, 1 failure (e.g. the directory cannot be created), 2 usage.
`

func cmdInit(ctx context.Context, e *env, args []string) error {
	fs := newFlags("init")
	if err := parse(e, fs, initUsage, args); err != nil {
		return err
	}
	w, err := workspace.Init(e.root, workspace.Options{})
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(e.stdout, "workspace ready at %s\n\nNext:\n", w.Dir())
	root := ""
	if e.root != workspace.DefaultRoot {
		root = "--root " + shellQuote(w.Dir()) + " "
	}
	fmt.Fprintf(e.stdout, "  workspaced %stask create --description \"what to do\"   # prints the task id\n", root)
	fmt.Fprintf(e.stdout, "  workspaced %sserve                                      # the daemon that keeps state.json\n", root)
	fmt.Fprintf(e.stdout, "  workspaced %senv store --task ID --key K --description D --value '{}'\n", root)
	return nil
}

// shellQuote quotes s for a shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
