package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

const frictionUsage = `workspaced friction — the cross-task friction log (friction/friction.json).

Friction is trouble that recurs: a plan sent back again and again, the same
review problem across reviews, work that fails for a common cause, a subtask
in progress far longer than its complexity allows, an escalation to a human.
The daemon records it by itself; agents and people add and resolve entries
here. A repeat of a known pending pattern increments that entry's
occurrences and adds the task instead of adding an entry. Every change is
made under the log's lock, so any number of processes may add at once.

Types:    ` + "repeated_revision, reviewer_pattern, worker_failure, timeout, escalation" + `
Statuses: pending, applied, dismissed

Usage:
  workspaced friction add --type T --description D [--task ID]... [--pattern P]
                          [--suggested-action A] [--agent A] [--json]
  workspaced friction list [--status S] [--type T] [--json]
  workspaced friction show ID [--json]
  workspaced friction resolve ID --status applied|dismissed [--json]

Examples:
  workspaced friction add --type reviewer_pattern --task t1 --description "missing input validation"
  workspaced friction list --status pending
  workspaced friction resolve friction_003 --status applied

Exit codes: 0 ok, 1 failure (bad type or status, corrupt log), 2 usage,
3 no such entry, 4 the log's lock still held at the timeout.
`

func cmdFriction(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "friction", frictionUsage, []subcommand{
		{"add", "record friction; prints its id", frictionAdd},
		{"list", "entries with their status, occurrences and tasks", frictionList},
		{"show", "one entry in full", frictionShow},
		{"resolve", "mark an entry applied or dismissed", frictionResolve},
	}, args)
}

// openFriction opens the workspace and its friction log, with the lock
// timeout and file mode of workspace.json.
func openFriction(ctx context.Context, e *env, agent string) (workspace.Store, *friction.Log, error) {
	w, err := e.openStore()
	if err != nil {
		return nil, nil, err
	}
	return w, friction.Open(w, agent), nil
}

// frictionErr gives errors of the friction package the workspace kinds the
// exit codes are mapped from, and a hint where one helps. The message is
// the friction package's own, which already says what failed.
func frictionErr(err error) error {
	kind, hint := error(nil), ""
	switch {
	case errors.Is(err, friction.ErrNotFound):
		kind, hint = workspace.ErrNotFound, "'workspaced friction list' shows the entry ids"
	case errors.Is(err, locking.ErrLocked):
		kind, hint = workspace.ErrLocked, "another process is changing the friction log; retry, or see 'workspaced locks'"
	case errors.Is(err, friction.ErrCorrupt):
		kind, hint = workspace.ErrInvalid, "fix or move friction/friction.json (it is never overwritten while invalid)"
	case errors.Is(err, friction.ErrInvalid):
		kind, hint = workspace.ErrInvalid, frictionHint(err.Error())
	default:
		return err
	}
	return &workspace.Error{Kind: kind, Op: err.Error(), Hint: hint}
}

const frictionAddUsage = `Usage:
  workspaced friction add --type T --description D [--task ID]... [--pattern P]
                          [--suggested-action A] [--agent A] [--json]

Records one friction entry and prints its id (--json: the entry as stored,
with "new": true or false). If a pending entry of the same type has the same
pattern (or, without --pattern, the same description), case and spacing
aside, no entry is added: that entry's occurrences grow by one and the tasks
join it. Its id is printed as for a new entry, and a note with the
occurrences goes to stderr. Digits and punctuation count: "probe-1" and
"probe-2" are two entries.

Types: repeated_revision, reviewer_pattern, worker_failure, timeout, escalation

Examples:
  id=$(workspaced friction add --type worker_failure --task t1 --task t2 \
         --description "solver times out on 30x30 grids" --pattern "solver timeout on large grids" \
         --suggested-action "raise the solver's budget for large grids")
  workspaced friction add --type escalation --task t7 --description "reviewer escalated to a human" --json

Exit codes: 0 ok (new or merged), 1 failure (unknown type, empty description,
bad task id), 2 usage, 4 the log's lock still held at the timeout.
`

// frictionAdded is `friction add --json`: the stored entry and whether it
// is new.
type frictionAdded struct {
	friction.Entry
	New bool `json:"new"`
}

func frictionAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlags("friction add")
	var entry friction.Entry
	var tasks stringList
	fs.StringVar(&entry.Type, "type", "", "the friction `TYPE`: "+strings.Join(friction.Types, ", "))
	fs.StringVar(&entry.Description, "description", "", "what happened, in `TEXT`")
	fs.Var(&tasks, "task", "an affected task `ID` (repeatable)")
	fs.StringVar(&entry.Pattern, "pattern", "", "what repeats are recognised by, in `TEXT` (default: the description)")
	fs.StringVar(&entry.SuggestedAction, "suggested-action", "", "what could be done about it, in `TEXT`")
	agent := fs.String("agent", "", "the `AGENT` recording it, for the lock's holder record (default $WORKSPACE_AGENT, else cli)")
	asJSON := fs.Bool("json", false, "print the stored entry as JSON")
	if err := parseNeeding(e, fs, frictionAddUsage, args, "type", "description"); err != nil {
		return err
	}
	entry.AffectedTasks = tasks
	w, log, err := openFriction(ctx, e, agentOr(*agent, "cli"))
	if err != nil {
		return err
	}
	defer w.Close()
	stored, isNew, err := log.Add(ctx, entry)
	if err != nil {
		return frictionErr(err)
	}
	w.NoteFriction(ctx, friction.Recorded(stored, isNew), tasks)
	if *asJSON {
		return printJSON(e.stdout, frictionAdded{Entry: stored, New: isNew})
	}
	fmt.Fprintln(e.stdout, stored.ID)
	if !isNew {
		fmt.Fprintf(e.stderr, "note: a known pattern: %s now has %d occurrences\n", stored.ID, stored.Occurrences)
	}
	return nil
}

const frictionListUsage = `Usage:
  workspaced friction list [--status S] [--type T] [--json]

Lists the entries in id order: id, type, status, occurrences, affected
tasks and the start of the description. --json prints a JSON array of the
entries in full.

Examples:
  workspaced friction list
  workspaced friction list --status pending --type reviewer_pattern
  workspaced friction list --json | jq -r '.[] | select(.occurrences >= 3) | .id'

Exit codes: 0 ok, 1 failure (unknown status or type, corrupt log), 2 usage,
3 no workspace.
`

func frictionList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("friction list")
	var f friction.Filter
	fs.StringVar(&f.Status, "status", "", "only entries with this status, `"+strings.Join(friction.Statuses, "|")+"`")
	fs.StringVar(&f.Type, "type", "", "only entries of this `TYPE`: "+strings.Join(friction.Types, ", "))
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := parse(e, fs, frictionListUsage, args); err != nil {
		return err
	}
	w, log, err := openFriction(ctx, e, "")
	if err != nil {
		return err
	}
	defer w.Close()
	entries, err := log.List(ctx, f)
	if err != nil {
		return frictionErr(err)
	}
	if *asJSON {
		return printJSON(e.stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(e.stdout, "no friction entries")
		return nil
	}
	rows := make([][]string, len(entries))
	for i, en := range entries {
		rows[i] = []string{en.ID, en.Type, en.Status, fmt.Sprint(en.Occurrences),
			cut(strings.Join(en.AffectedTasks, ","), 30), cut(en.Description, 60)}
	}
	table(e.stdout, []string{"ID", "TYPE", "STATUS", "OCCURRENCES", "TASKS", "DESCRIPTION"}, rows)
	return nil
}

const frictionShowUsage = `Usage:
  workspaced friction show ID [--json]

Shows one entry in full.

Examples:
  workspaced friction show friction_001
  workspaced friction show friction_001 --json | jq .affected_tasks

Exit codes: 0 ok, 1 failure (corrupt log), 2 usage, 3 no such entry.
`

func frictionShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("friction show")
	asJSON := fs.Bool("json", false, "print the entry as JSON")
	id, err := parseWithID(e, fs, frictionShowUsage, args)
	if err != nil {
		return err
	}
	w, log, err := openFriction(ctx, e, "")
	if err != nil {
		return err
	}
	defer w.Close()
	en, err := log.Get(ctx, id)
	if err != nil {
		return frictionErr(err)
	}
	if *asJSON {
		return printJSON(e.stdout, en)
	}
	printEntry(e, en)
	return nil
}

func printEntry(e *env, en friction.Entry) {
	tasks := strings.Join(en.AffectedTasks, ", ")
	if tasks == "" {
		tasks = "(none)"
	}
	rows := [][]string{
		{"id:", en.ID},
		{"type:", en.Type},
		{"status:", en.Status},
		{"recorded:", en.Timestamp.UTC().Format(time.RFC3339Nano)},
		{"occurrences:", fmt.Sprint(en.Occurrences)},
		{"tasks:", tasks},
		{"description:", en.Description},
	}
	if en.Pattern != "" {
		rows = append(rows, []string{"pattern:", en.Pattern})
	}
	if en.SuggestedAction != "" {
		rows = append(rows, []string{"suggested action:", en.SuggestedAction})
	}
	table(e.stdout, nil, rows)
}

const frictionResolveUsage = `Usage:
  workspaced friction resolve ID --status applied|dismissed [--agent A] [--json]

Sets an entry's status: applied (something was done about it) or dismissed
(nothing will be). A resolved entry may be resolved again, to either. A
resolved entry is never merged into: the same friction coming back later
becomes a new entry. Prints the id and its new status (--json: the entry).

Examples:
  workspaced friction resolve friction_003 --status applied
  workspaced friction resolve friction_004 --status dismissed --json

Exit codes: 0 ok, 1 failure (a status other than applied or dismissed),
2 usage, 3 no such entry, 4 the log's lock still held at the timeout.
`

func frictionResolve(ctx context.Context, e *env, args []string) error {
	fs := newFlags("friction resolve")
	status := fs.String("status", "", "the new status, `applied|dismissed`")
	agent := fs.String("agent", "", "the `AGENT` resolving it, for the lock's holder record (default $WORKSPACE_AGENT, else cli)")
	asJSON := fs.Bool("json", false, "print the entry as JSON")
	id, err := parseWithID(e, fs, frictionResolveUsage, args)
	if err != nil {
		return err
	}
	if err := need(fs, "status"); err != nil {
		return err
	}
	w, log, err := openFriction(ctx, e, agentOr(*agent, "cli"))
	if err != nil {
		return err
	}
	defer w.Close()
	en, err := log.Resolve(ctx, id, *status)
	if err != nil {
		return frictionErr(err)
	}
	if *asJSON {
		return printJSON(e.stdout, en)
	}
	fmt.Fprintf(e.stdout, "%s %s\n", en.ID, en.Status)
	return nil
}

// parseWithID parses a command that takes exactly one positional ID, before
// or after its flags (flag parsing stops at the first positional argument,
// so what follows it is parsed again).
func parseWithID(e *env, fs *flag.FlagSet, usageText string, args []string) (string, error) {
	if err := parseArgs(e, fs, usageText, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", usageHint(fs.Name(), "missing the entry ID")
	}
	id := fs.Arg(0)
	if err := parseArgs(e, fs, usageText, fs.Args()[1:]); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usageHint(fs.Name(), "unexpected argument %q", fs.Arg(0))
	}
	return id, nil
}
