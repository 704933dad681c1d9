// Command workspaced is the command line, the daemon and the MCP server of a
// workspaced tree. Run `workspaced help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/workspaced/workspaced/workspace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes (SPEC §9).
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConflict = 4
)

// env is what every command gets: the streams and the global flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	root           string // --root, resolved with WORKSPACE_ROOT and the default
}

// open opens the workspace at the resolved root.
func (e *env) open() (*workspace.Workspace, error) {
	return workspace.Open(e.root, workspace.Options{})
}

// command is one subcommand. run parses its own flags from args.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"init", "create a workspace (safe to run twice)", cmdInit},
		{"task", "create, list and show tasks", cmdTask},
		{"plan", "write a new version of a task's plan", cmdPlan},
		{"output", "write a subtask's output", cmdOutput},
		{"review", "write a review decision", cmdReview},
		{"claim", "take a subtask (drops a .claim marker)", cmdClaim},
		{"done", "finish something (drops a .done marker)", cmdDone},
		{"env", "thread-scoped environment data: store, get, list, update, delete", cmdEnv},
		{"memory", "long-term entries: --scope global|agent|session", cmdMemory},
		{"thread", "delegation threads: new, show, list, chain, update", cmdThread},
		{"preamble", "the delegation preamble a thread's agent receives", cmdPreamble},
		{"system-context", "the \"what am I\" block of an agent", cmdSystemContext},
		{"context", "assemble a thread's context within a token budget", cmdContext},
		{"events", "read or follow task events", cmdEvents},
		{"friction", "the friction log: add, list, show, resolve", cmdFriction},
		{"serve", "run the single-writer daemon", cmdServe},
		{"status", "is a daemon serving this root; tasks and waiting markers", cmdStatus},
		{"state", "show or rebuild a task's state.json", cmdState},
		{"backup", "list or restore state.json backups", cmdBackup},
		{"cleanup", "prune finished tasks by the retention policy", cmdCleanup},
		{"validate", "check files against their schemas", cmdValidate},
		{"locks", "who holds which lock", cmdLocks},
		{"lock", "run a command under a workspace lock, like flock(1)", cmdLock},
		{"mcp", "serve the workspace to an agent over MCP (stdio)", cmdMCP},
		{"bench", "measure the workload against the disk's own floor", cmdBench},
		{"demo", "run the whole flow on a fresh workspace", cmdDemo},
		{"schema", "print the JSON Schema of a file kind", cmdSchema},
		{"version", "print the version", cmdVersion},
	}
}

const topUsage = `workspaced — a shared workspace for multi-agent systems, kept as plain files.

Usage:
  workspaced [--root DIR] <command> [flags]

The root is --root, else $WORKSPACE_ROOT, else ./workspace.
Every command has --help. Exit codes: 0 ok, 1 failure, 2 usage,
3 not found, 4 conflict (version mismatch, lock timeout, daemon already serving).

Commands:
`

func usage(w io.Writer) {
	fmt.Fprint(w, topUsage)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nStart with:\n  workspaced demo            # the whole flow on a fresh workspace\n  workspaced init && workspaced task create --description \"...\"\n")
}

// run is the whole program; main only exits with its code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("workspaced", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rootFlag := fs.String("root", "", "workspace root")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "workspaced: %v\n", err)
		usage(stderr)
		return exitUsage
	}
	e.root = workspace.ResolveRoot(*rootFlag)
	rest := fs.Args()
	if len(rest) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 {
			return run(ctx, append([]string{rest[1], "--help"}, []string{}...), stdin, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, e, rest[1:])
			return report(stderr, err)
		}
	}
	fmt.Fprintf(stderr, "workspaced: unknown command %q\n", name)
	if s := suggest(name); s != "" {
		fmt.Fprintf(stderr, "hint: did you mean %q?\n", s)
	}
	fmt.Fprintln(stderr, "hint: 'workspaced help' lists the commands")
	return exitUsage
}

func suggest(name string) string {
	var names []string
	for _, c := range commands() {
		if strings.HasPrefix(c.name, name) || strings.HasPrefix(name, c.name) {
			names = append(names, c.name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries a specific exit code (a child's, for `lock`) without a
// message of its own.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// errHelpShown means --help printed the usage: exit 0.
var errHelpShown = errors.New("help shown")

// report prints err the one way errors are printed and maps it to an exit
// code in one switch.
func report(stderr io.Writer, err error) int {
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "workspaced: %v\n", err)
	if h := workspace.HintOf(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, workspace.ErrNotFound):
		return exitNotFound
	case errors.Is(err, workspace.ErrConflict), errors.Is(err, workspace.ErrLocked):
		return exitConflict
	}
	return exitFailure
}

// newFlags makes a subcommand's flag set; parse handles --help and errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args into fs, handling --help and errors uniformly.
func parse(e *env, fs *flag.FlagSet, usageText string, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, usageText)
			printDefaults(e.stdout, fs)
			return errHelpShown
		}
		return usagef("%s: %v (see 'workspaced %s --help')", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (see 'workspaced %s --help')", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
