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
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runEnv(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, process: true}, os.Args[1:])
	stop()
	os.Exit(code)
}

// Exit codes, the same for every command, so scripts can tell a missing
// thing (3) and a conflict (4) from a failure.
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
	title          string // the title line of the command being run, for its --help
	opened         bool   // the command opened the workspace at root
	// process says the command is the process itself (main), not run in
	// a test's process: serve may start its binary again in its place
	// (serve_slack_linux.go).
	process bool
}

// openStore opens the workspace at the resolved root as a
// workspace.Store, the way every command that works on any backend opens
// it (service.Open).
func (e *env) openStore() (workspace.Store, error) {
	e.opened = true
	return service.Open(context.Background(), e.root, service.Options{})
}

// fileTree is the file tree under w, for the commands that need what only
// a tree has; a workspace kept otherwise is refused with a clear error.
func fileTree(op string, w workspace.Store) (*service.FileTree, error) {
	return service.Tree(op, w)
}

// tokenKeeper is where the workspace st keeps its agents' tokens:
// config/tokens.json of a directory, the tokens table on PostgreSQL.
func tokenKeeper(op string, st workspace.Store) (tokens.Keeper, error) {
	return service.Tokens(op, st)
}

// where names the workspace st for a message: its directory, or its
// schema on PostgreSQL (the URL may carry a password).
func (e *env) where(st workspace.Store) string {
	if w := service.Where(st); w != "" {
		return w
	}
	return "root " + e.root
}

// open opens the workspace at the resolved root as a file tree, for what
// only a tree has (paths, os.Root, flock held for a child process, the
// daemon's journal files); commands that need nothing of the kind use
// openStore. A directory that is not a workspace (neither workspace.json
// nor tasks/ in it) is refused with a hint, so a mistyped --root never
// gets a tree written into it.
func (e *env) open() (*service.FileTree, error) {
	e.opened = true
	return service.OpenTree(e.root, e.name())
}

// name is the name of the command being run, from its title.
func (e *env) name() string {
	name, _, _ := strings.Cut(strings.TrimPrefix(e.title, "workspaced "), " — ")
	return name
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
		{"skill", "skills thread contexts load by mode and tag: add, list, show, remove", cmdSkill},
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
		{"export", "write a workspace (files, PostgreSQL or SQLite) as the canonical file tree", cmdExport},
		{"import", "load a workspace into PostgreSQL or SQLite", cmdImport},
		{"copy", "a consistent copy of a live SQLite workspace", cmdCopy},
		{"mcp", "serve the workspace to agents over MCP (stdio or HTTP)", cmdMCP},
		{"token", "bearer tokens of remote agents: add, list, revoke", cmdToken},
		{"web", "serve the live panel and the HTTP API", cmdWeb},
		{"bench", "measure the workload against the disk's own floor", cmdBench},
		{"demo", "run the whole flow on a fresh workspace", cmdDemo},
		{"schema", "print the JSON Schema of a file kind", cmdSchema},
		{"completion", "print a shell completion script: bash, zsh or fish", cmdCompletion},
		{"version", "print the version", cmdVersion},
	}
}

const topUsage = `workspaced — a shared workspace for multi-agent systems, kept as plain files.

Usage:
  workspaced [--root DIR] <command> [flags]
  workspaced help <command> [<subcommand>]

Global flags:
  --root DIR     the workspace (also accepted after the command); else
                 $WORKSPACE_ROOT, else ./workspace
  -v, --version  print the version
  -h, --help     print this help

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
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

// runEnv is run with e's streams, e.process as main sets it.
func runEnv(ctx context.Context, e *env, args []string) int {
	stdin, stdout, stderr := e.stdin, e.stdout, e.stderr
	fs := flag.NewFlagSet("workspaced", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rootFlag := fs.String("root", "", "workspace `DIR`")
	showVersion := fs.Bool("version", false, "print the version")
	fs.BoolVar(showVersion, "v", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return exitOK
		}
		return report(stderr, flagError("", fs, err))
	}
	e.root = workspace.ResolveRoot(*rootFlag)
	if *showVersion {
		return report(stderr, cmdVersion(ctx, e, fs.Args()))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "help" || name == "--help" || name == "-h" {
		if len(rest) > 1 {
			// help CMD [SUB]: the same text as CMD [SUB] --help.
			return run(ctx, append(append([]string{}, rest[1:]...), "--help"), stdin, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			e.title = "workspaced " + c.name + " — " + c.summary
			err := c.run(ctx, e, rest[1:])
			return report(e.errWriter(stderr), err)
		}
	}
	hint := "'workspaced help' lists the commands"
	if s := suggest(name); s != "" {
		hint = fmt.Sprintf("did you mean 'workspaced %s'? (%s)", s, hint)
	}
	return report(stderr, &usageError{msg: fmt.Sprintf("unknown command %q", name), hint: hint})
}

// suggest returns the command name nearest to a mistyped one, or "".
func suggest(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return closest(name, names)
}

// usageError is a mistake in the command line: exit 2. hint, when set, is
// printed on its own line.
type usageError struct{ msg, hint string }

func (u *usageError) Error() string { return u.msg }

// usageHint is a usage error pointing at the command's --help.
func usageHint(cmd, format string, args ...any) error {
	return &usageError{msg: cmd + ": " + fmt.Sprintf(format, args...), hint: "see 'workspaced " + cmd + " --help'"}
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
	var ue *usageError
	if h := workspace.HintOf(err); h != "" {
		if f := flagFor(workspace.FieldOf(err)); f != "" {
			h += " (" + f + ")"
		}
		fmt.Fprintf(stderr, "hint: %s\n", h)
	} else if errors.As(err, &ue) && ue.hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", ue.hint)
	} else if h := hintFor(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	}
	if h := workspace.FaultHint(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	}
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

// flagFor names the flag that sets the request field a workspace error
// names as at fault (workspace.FieldOf), or "" when no flag does. Every
// subcommand spells these flags the same way.
func flagFor(field string) string {
	switch field {
	case workspace.FieldDescription:
		return "--description"
	case workspace.FieldValue:
		return "--value"
	case workspace.FieldID:
		return "--id"
	case workspace.FieldTask:
		return "--task"
	case workspace.FieldStatus:
		return "--status"
	case workspace.FieldError:
		return "--error"
	case workspace.FieldOutputFile:
		return "--output"
	}
	return ""
}

// newFlags makes a subcommand's flag set; parse handles --help and errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args into fs, handling --help and errors uniformly. Every
// command also takes --root after its name. Positional arguments are
// refused; parseArgs allows them.
func parse(e *env, fs *flag.FlagSet, usageText string, args []string) error {
	if err := parseArgs(e, fs, usageText, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageHint(fs.Name(), "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseArgs is parse that leaves positional arguments in fs.Args().
func parseArgs(e *env, fs *flag.FlagSet, usageText string, args []string) error {
	if fs.Lookup("root") == nil {
		fs.Func("root", rootFlagUsage, func(s string) error {
			if s == "" {
				return errors.New("empty directory")
			}
			e.root = s
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(e, fs, usageText)
			return errHelpShown
		}
		return flagError(fs.Name(), fs, err)
	}
	return nil
}

// need returns a usage error naming the first of the given flags that was
// left empty.
func need(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && f.Value.String() == "" {
			return usageHint(fs.Name(), "missing --%s", n)
		}
	}
	return nil
}

// parseNeeding is parse, then need of names.
func parseNeeding(e *env, fs *flag.FlagSet, usageText string, args []string, names ...string) error {
	if err := parse(e, fs, usageText, args); err != nil {
		return err
	}
	return need(fs, names...)
}

// agentOr returns flagValue, else $WORKSPACE_AGENT, else def.
func agentOr(flagValue, def string) string {
	if flagValue != "" {
		return flagValue
	}
	if a := os.Getenv("WORKSPACE_AGENT"); a != "" {
		return a
	}
	return def
}

// maxInput bounds what a command reads from --file or stdin; the workspace
// refuses anything over its own (smaller) limits with a clear error.
const maxInput = 64 << 20

// readInput reads a file named by a flag, or stdin for "-".
func readInput(e *env, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, inputError(name, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, inputError(name, err)
	}
	if len(data) > maxInput {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: fmt.Sprintf("over %d bytes", maxInput)}
	}
	return data, nil
}

// printJSON writes v as canonical JSON (two-space indent, trailing newline).
func printJSON(w io.Writer, v any) error {
	data, err := atomicfile.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// display is the path of a file of the tree as the user named the root
// (rel is slash-separated, relative to the root); on a database root, rel
// itself.
func (e *env) display(rel string) string {
	if !service.HasPaths(e.root) {
		// A database has no paths: the protocol's name of the thing
		// (tasks/t1/.claim.w1.…) says which task and which marker, and
		// the root, with its password, stays out of it.
		return rel
	}
	return filepath.Join(e.absRoot(), filepath.FromSlash(rel))
}

// displayMarker is the marker m of task taskID as printed: its path
// (display) on files, where m is relative to the root; on a database,
// where a store names a marker by its name alone, the protocol's name
// tasks/<task>/<marker>.
func (e *env) displayMarker(taskID, m string) string {
	if !service.HasPaths(e.root) {
		return path.Join(workspace.TaskDir(taskID), path.Base(m))
	}
	return e.display(m)
}

// subcommand is one verb of a command with verbs (task create, env get).
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// dispatch runs the verb named by args[0], or prints the command's usage.
func dispatch(ctx context.Context, e *env, cmd, usageText string, subs []subcommand, args []string) error {
	list := func(w io.Writer) {
		fmt.Fprint(w, usageText)
		fmt.Fprintln(w, "\nSubcommands:")
		width := 8
		for _, s := range subs {
			width = max(width, len(s.name)+1)
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s %s\n", width, s.name, s.summary)
		}
		fmt.Fprintf(w, "\nRun 'workspaced %s SUBCOMMAND --help' for its flags and examples.\n", cmd)
	}
	if len(args) == 0 {
		return usageHint(cmd, "missing subcommand (one of %s)", subNames(subs))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		list(e.stdout)
		return errHelpShown
	}
	for _, s := range subs {
		if s.name == args[0] {
			e.title = "workspaced " + cmd + " " + s.name + " — " + s.summary
			return s.run(ctx, e, args[1:])
		}
	}
	hint := "see 'workspaced " + cmd + " --help'"
	names := strings.Split(subNames(subs), ", ")
	if s := closest(args[0], names); s != "" {
		hint = "did you mean 'workspaced " + cmd + " " + s + "'? (" + hint + ")"
	}
	return &usageError{msg: fmt.Sprintf("%s: unknown subcommand %q (one of %s)", cmd, args[0], subNames(subs)), hint: hint}
}

func subNames(subs []subcommand) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// table prints aligned columns for people.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header != nil {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// cut shortens s to n runes for a table cell, on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
