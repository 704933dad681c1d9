package main

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

const reviewUsage = `workspaced review — write a review decision (tasks/<task>/reviews/<id>.json).

Usage:
  workspaced review write (--task T | --thread X) --id R --file F|- [--agent A] [--done [--wait [DUR]]] [--json]

The file holds the review (a JSON object with "type" and "verdict"). id is
set to R, reviewer to the agent (when one is named) and reviewed_at is
filled when missing; a file whose id or reviewer says otherwise is refused,
naming both. It is checked against the review schema before anything is
written. --done also drops the done marker that reports the review to the
daemon (its agent: --agent, else $WORKSPACE_AGENT, else "cli"). Prints the
path written (and the marker's); on a postgres:// root, the names
tasks/<task>/reviews/<id>.json (and tasks/<task>/<marker>). With --done,
--wait waits for the daemon's verdict (at most DUR, default 1m) and exits by
it, as 'workspaced done --wait' does: 0 applied, 4 refused, 1 no daemon or
no verdict within DUR.

A review is final once a done marker reported it (the marker waits for the
daemon, or the daemon took it): writing it again is refused (exit 4), and a
new decision is a new review under a new id (plan_v2, cp_1_r2). A review
not yet reported that a write replaces is kept as
reviews/history/<id>.v<N>.json.

Examples:
  workspaced review write --task t1 --id plan_v1 --agent reviewer --file review.json --done
  workspaced review write --task t1 --id plan_v1 --agent reviewer --file review.json --done --wait
  echo '{"type":"plan_review","verdict":"approved"}' | workspaced review write --task t1 --id plan_v2 --file - --done
  workspaced review write --task t1 --id cp_1 --agent reviewer --file cp.json --json

Exit codes: 0 ok (with --wait: applied), 1 failure (not JSON, schema-invalid
review, an id or reviewer that contradicts R or A; with --wait: no daemon,
or no verdict within DUR), 2 usage, 3 task not found, 4 conflict (the review
was reported; with --wait: refused) or the task's lock held past the lock
timeout.
`

func cmdReview(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "review", reviewUsage, []subcommand{
		{"write", "write reviews/<id>.json", reviewWrite},
	}, args)
}

func reviewWrite(ctx context.Context, e *env, args []string) error {
	fs := newFlags("review write")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	rid := fs.String("id", "", "review `ID` (the file name)")
	agent := fs.String("agent", "", "the reviewing `AGENT` (default $WORKSPACE_AGENT, else \"cli\")")
	file := fs.String("file", "", "read the review from `FILE` ('-' for stdin)")
	done := fs.Bool("done", false, "also drop the done marker for it")
	var wait waitFlag
	fs.Var(&wait, "wait", "with --done, wait for the daemon's verdict, at most `[DUR]` (default 1m), and exit by it")
	asJSON := fs.Bool("json", false, "print JSON")
	args, err := joinWait("review write", args)
	if err != nil {
		return err
	}
	if err := parseNeeding(e, fs, reviewUsage, args, "id", "file"); err != nil {
		return err
	}
	if wait.on && !*done {
		return usageHint("review write", "--wait goes with --done: without a marker there is no verdict to wait for")
	}
	named := agentOr(*agent, "")
	data, err := readInput(e, *file)
	if err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "review write", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	write := func(ctx context.Context) (string, error) { return w.WriteReview(ctx, id, *rid, named, data) }
	var d *workspace.DoneRequest
	if *done {
		d = &workspace.DoneRequest{TaskID: id, Agent: agentOr(named, "cli")}
	}
	return finishProduct(ctx, e, w, id, write, d, wait, *asJSON, &written{})
}
