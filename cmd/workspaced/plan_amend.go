package main

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const planAmendUsage = `workspaced plan amend — amend the running plan of a task.

Usage:
  workspaced plan amend (--task T | --thread X) [--add ID=DESCRIPTION]... [--after ID[,ID…]]
                        [--withdraw ID]... [--file F|-] [--agent A] [--wait [DUR]] [--json]

Once a plan is approved it is never replaced; it grows by amendments: new
subtasks (--add, each depending on the --after subtasks), pending subtasks
changed ("change" in --file: whole subtasks replacing those of the same id)
or withdrawn (--withdraw). A subtask in progress, completed or failed never
changes. The amendment is written as the plan's next version, and a done
marker proposes it to the daemon. By the workspace's plans.amendment_review
setting (default "changes"), one that only adds subtasks applies at once and
one that changes or withdraws any waits for a plan review (review write
--type plan_review, then done): until then the running version stays.

--file holds {"add": [subtasks], "change": [subtasks], "withdraw": [ids]}
(a subtask as in plan.json); the flags add to it.

Examples:
  workspaced plan amend --task t1 --add st_4="index logs/b.txt" --add st_5="index logs/c.txt" --after st_1 --wait
  ls new/ | jq -R '{id: ("f_" + gsub("[^A-Za-z0-9]"; "_")), description: ("process " + .)}' |
    jq -s '{add: .}' | workspaced plan amend --task t1 --file - --wait
  workspaced plan amend --task t1 --withdraw st_3 --wait --json

Exit codes: 0 ok (with --wait: applied, or awaiting its review), 1 failure
(bad amendment; with --wait: no daemon, or no verdict within DUR), 2 usage,
3 task not found, 4 refused (no approved plan, an amendment awaits review, a
started subtask changed; with --wait: refused by the daemon).
`

// listFlag is a flag given any number of times.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// amendOut is what plan amend prints with --json.
type amendOut struct {
	Path      string      `json:"path"`
	Version   int         `json:"version"`
	Marker    string      `json:"marker"`
	Added     []string    `json:"added,omitempty"`
	Changed   []string    `json:"changed,omitempty"`
	Withdrawn []string    `json:"withdrawn,omitempty"`
	Review    bool        `json:"review"`
	Verdict   *verdictOut `json:"verdict,omitempty"`
}

func planAmend(ctx context.Context, e *env, args []string) error {
	fs := newFlags("plan amend")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	file := fs.String("file", "", "read the amendment from `FILE` ('-' for stdin)")
	var adds, withdraws listFlag
	fs.Var(&adds, "add", "add the subtask `SUBTASK`, written id=description (repeatable)")
	after := fs.String("after", "", "the added subtasks depend on these `IDS` (comma-separated)")
	fs.Var(&withdraws, "withdraw", "withdraw the pending subtask `ID` (repeatable)")
	agent := fs.String("agent", "", "the amending `AGENT` (default $WORKSPACE_AGENT, else \"cli\")")
	var wait waitFlag
	fs.Var(&wait, "wait", "wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("plan amend", args)
	if err != nil {
		return err
	}
	if err := parse(e, fs, planAmendUsage, args); err != nil {
		return err
	}
	var a workspace.PlanAmendment
	if *file != "" {
		data, err := readInput(e, *file)
		if err != nil {
			return err
		}
		if err := workspace.DecodeStrict("amendment", data, workspace.DefaultMaxDepth, &a); err != nil {
			return err
		}
	}
	var deps []string
	if *after != "" {
		deps = strings.Split(*after, ",")
	}
	for _, s := range adds {
		id, desc, ok := strings.Cut(s, "=")
		if !ok || id == "" || desc == "" {
			return usageHint("plan amend", "--add %q: write ID=DESCRIPTION", s)
		}
		a.Add = append(a.Add, workspace.Subtask{ID: id, Description: desc, Dependencies: deps})
	}
	a.Withdraw = append(a.Withdraw, withdraws...)
	if len(a.Add)+len(a.Change)+len(a.Withdraw) == 0 {
		return usageHint("plan amend", "nothing to amend: give --add, --withdraw or --file")
	}
	w, id, err := e.openTask(ctx, "plan amend", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	op := "amend the plan of task " + id
	if err := service.BeforeMarker(ctx, w, op, id, wait.on); err != nil {
		return err
	}
	am, err := service.AmendPlan(ctx, w, id, agentOr(*agent, "cli"), a, wait.options())
	if err != nil && am.Marker == "" {
		return err
	}
	if err != nil {
		return waitError(op, id, err, wait)
	}
	out := amendOut{Path: e.display(path.Join(workspace.TaskDir(id), am.Product)), Version: am.Plan.Version,
		Marker: e.displayMarker(id, am.Marker), Added: am.Diff.Added, Changed: am.Diff.Changed, Withdrawn: am.Diff.Withdrawn, Review: am.Review}
	if wait.on {
		if am.Stands != service.Decided {
			return waitError(op, id, am.Why, wait)
		}
		out.Verdict = &verdictOut{Verdict: am.Verdict, MarkerPath: out.Marker}
	}
	if *asJSON {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.stdout, out.Path)
		fmt.Fprintln(e.stdout, out.Marker)
		fmt.Fprintln(e.stdout, describeAmendment(am))
		if out.Verdict != nil {
			fmt.Fprintln(e.stdout, describeVerdict(am.Verdict))
		}
	}
	if out.Verdict != nil {
		return verdictErr(op, am.Verdict)
	}
	return nil
}

// describeAmendment is the line plan amend prints for what it proposed.
func describeAmendment(am service.Amended) string {
	how := "applies once the daemon takes it"
	if am.Review {
		how = "waits for a plan review before it applies"
	}
	return fmt.Sprintf("plan %s v%d %s; it %s", am.Plan.ID, am.Plan.Version, am.Words(), how)
}
