package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/workspaced/workspaced/demo"
	"github.com/workspaced/workspaced/workspace"
)

const demoUsage = `workspaced demo — run the whole flow on a fresh workspace and watch it.

Usage:
  workspaced demo [--root DIR] [--agents N] [--time-scale F] [--quiet]

Creates a workspace (a new directory under the OS temp dir unless --root
names a new or empty one), starts the daemon in-process and plays two tasks
with simulated agents that use only the workspace's files and markers:

  - the Hivemind flow: a task (a REST auth API), a plan v1 sent back by the
    plan review, a plan v2 approved, N workers claiming and finishing
    subtasks in parallel, a checkpoint review, one subtask failing once
    and retried, and friction recorded for the revision and the failure;
  - the ARC-AGI env-data exchange: coordinator → solver → observer threads,
    the solver storing the puzzle, the observer listing, reading and
    storing its patterns, and the delegation preamble the observer gets.

Events stream as they happen; a summary and where to look in the tree end
the run, with commands to try next that work as printed: they name this
binary as it can be run again ('workspaced' when that is it on $PATH, else
its absolute path, or 'go run ./cmd/workspaced' after 'go run'). The daemon stops when the demo does. --root and WORKSPACE_ROOT
given before the command are ignored: the demo never touches an existing
workspace that holds tasks.

Examples:
  workspaced demo
  workspaced demo --root /tmp/run1 --agents 5
  workspaced demo --time-scale 0.1 --quiet

Exit codes: 0 ok, 1 failure (the flow did not complete), 2 usage,
4 --root already holds tasks or other files.
`

func cmdDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlags("demo")
	root := fs.String("root", "", "create the workspace in `DIR` (new or empty; default: a new temp directory)")
	agents := fs.Int("agents", demo.DefaultAgents, "number of parallel workers `N`")
	scale := fs.Float64("time-scale", 1, "multiply the simulated work delays by `F` (0.01 for a near-instant run)")
	quiet := fs.Bool("quiet", false, "print only the start line and the summary")
	if err := parse(e, fs, demoUsage, args); err != nil {
		return err
	}
	if *agents < 1 || *agents > demo.MaxAgents {
		return usageHint("demo", "--agents %d: use 1 to %d", *agents, demo.MaxAgents)
	}
	if *scale <= 0 {
		return usageHint("demo", "--time-scale must be positive")
	}
	logger, err := newLogger(e, "text", "warn")
	if err != nil {
		return err
	}
	_, err = demo.Run(ctx, demo.Config{Root: *root, Agents: *agents, TimeScale: *scale, Out: e.stdout, Quiet: *quiet,
		Logger: logger.With(slog.String("from", "daemon")), Command: selfCommand()})
	if errors.Is(err, demo.ErrRootInUse) {
		// A root in use is a conflict (exit 4), with the fix as a hint.
		return &workspace.Error{Kind: workspace.ErrConflict, Op: err.Error(),
			Hint: "pass a new or empty directory to --root, or omit it for a fresh temp directory"}
	}
	return err
}

// selfCommand is how a command suggested to the user can run this binary
// again (see commandFor).
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "workspaced"
	}
	wd, _ := os.Getwd()
	return commandFor(exe, wd, exec.LookPath)
}

// commandFor says how to run the binary at exe again from wd: "workspaced"
// when that name on $PATH is this binary; for a binary 'go run' built (in
// a go-build temporary directory, removed when it exits) "go run
// ./cmd/workspaced" from the module's root, else by its package path; else
// exe itself, absolute.
func commandFor(exe, wd string, lookPath func(string) (string, error)) string {
	sep := string(filepath.Separator)
	if strings.Contains(exe, sep+"go-build") && strings.Contains(exe, sep+"exe"+sep) {
		if st, err := os.Stat(filepath.Join(wd, "cmd", "workspaced")); err == nil && st.IsDir() {
			return "go run ./cmd/workspaced"
		}
		return "go run github.com/workspaced/workspaced/cmd/workspaced"
	}
	if p, err := lookPath("workspaced"); err == nil {
		if a, err := os.Stat(p); err == nil {
			if b, err := os.Stat(exe); err == nil && os.SameFile(a, b) {
				return "workspaced"
			}
		}
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	return shellQuote(exe)
}
