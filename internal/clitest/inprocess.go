package clitest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// processCommands start the binary, but for their --help: serve is a
// daemon (its memory limit, GC and open-files settings are the
// process's); lock runs a child that dies with its parent; demo and bench
// run the binary itself again and print its path.
var processCommands = []string{"serve", "lock", "demo", "bench"}

// pathFlags name a file, a directory or a root, which a relative value
// names from the working directory.
var pathFlags = []string{"root", "file", "value-file", "token-file", "tls-cert", "tls-key", "dir", "daemon", "vs-daemon", "agent-root"}

// transferFlags name a root or a file for the transferCommands (for
// thread new, --from and --to are agents).
var (
	transferCommands = []string{"export", "import", "copy"}
	transferFlags    = []string{"from", "to"}
)

// rootless commands read no workspace.
var rootless = []string{"help", "-h", "--help", "-help", "version", "-v", "--version", "completion", "schema"}

// InProcess reports whether the command args may run in-process, through
// the run InProcess registered, and if so the root it must be given with
// --root. It may where nothing tells the two apart: w.Process is unset;
// w.Env is the test's environment with at most WORKSPACE_ROOT added (and
// WORKSPACE_AGENT or WORKSPACE_TOKEN set empty), a root that needs no
// working directory (absolute, sqlite: of an absolute path, postgres://);
// or no root at all for a command that reads none; no argument a path
// relative to w.Dir; and the command is not one of processCommands.
func (w *WS) InProcess(args []string) (root string, ok bool) {
	if inProcess == nil || w.Process {
		return "", false
	}
	root, ok = envRoot(w.Env)
	if !ok {
		return "", false
	}
	name := commandName(args)
	own := args // the command's own arguments, before a child's after "--"
	if i := slices.Index(args, "--"); i >= 0 {
		own = args[:i]
	}
	help := slices.Contains(own, "--help") || slices.Contains(own, "-h")
	if slices.Contains(processCommands, name) && !help {
		return "", false
	}
	switch {
	case root == "" && !slices.Contains(args, "--root") && !slices.Contains(rootless, name) && !help:
		return "", false
	case root != "" && !placeless(root):
		return "", false
	}
	for i, a := range args {
		flag, v, isValue := strings.Cut(a, "=")
		if isValue && strings.HasPrefix(a, "-") {
			a = v
		} else if i > 0 {
			flag, isValue = args[i-1], true
		}
		isPath := isValue && (slices.Contains(pathFlags, strings.TrimLeft(flag, "-")) ||
			slices.Contains(transferCommands, name) && slices.Contains(transferFlags, strings.TrimLeft(flag, "-")))
		if relativeHere(w.Dir, a) || isPath && a != "-" && !placeless(a) {
			return "", false
		}
	}
	return root, true
}

// envRoot is WORKSPACE_ROOT of env, and whether env is otherwise the
// test's own environment.
func envRoot(env []string) (root string, ok bool) {
	own := os.Environ()
	for _, kv := range env {
		if slices.Contains(own, kv) {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "WORKSPACE_ROOT":
			root = v
		case (k == "WORKSPACE_AGENT" || k == "WORKSPACE_TOKEN") && v == "":
		default:
			return "", false
		}
	}
	for _, kv := range own {
		if !slices.Contains(env, kv) {
			return "", false
		}
	}
	return root, true
}

// placeless reports whether root names the same workspace from any
// working directory.
func placeless(root string) bool {
	switch {
	case postgres.IsURL(root):
		return true
	case sqlite.IsURL(root):
		return strings.HasPrefix(strings.TrimPrefix(root, sqlite.Prefix), "/")
	}
	return filepath.IsAbs(root)
}

// relativeHere reports whether a, relative, names something in dir (its
// first element is there): a path the command would look up from its
// working directory.
func relativeHere(dir, a string) bool {
	if a == "" || filepath.IsAbs(a) || strings.HasPrefix(a, "-") || strings.Contains(a, "://") || dir == "" {
		return false
	}
	a = strings.TrimPrefix(a, "sqlite:")
	first, _, _ := strings.Cut(filepath.ToSlash(filepath.Clean(a)), "/")
	if first == "." || first == ".." {
		return false // an id a command refuses, or a path a path flag names
	}
	_, err := os.Lstat(filepath.Join(dir, first))
	return err == nil
}

// commandName is the first argument that is not a global flag.
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--root" || a == "-root":
			i++
		case strings.HasPrefix(a, "-") && a != "-h" && a != "--help" && a != "-help" && a != "-v" && a != "--version":
		default:
			return a
		}
	}
	return ""
}

// runInProcess runs args through inProcess with root given as --root.
func runInProcess(root, stdin string, args []string) Result {
	inProcessRuns.Add(1)
	if root != "" {
		args = append([]string{"--root", root}, args...)
	}
	var out, errb Log
	code := inProcess(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}
