package main

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

const outputUsage = `workspaced output — write a subtask's output (tasks/<task>/outputs/<subtask>.json).

Usage:
  workspaced output write (--task T | --thread X) --subtask S --agent A --file F|- [--done] [--json]

The file holds the output (a JSON object). subtask_id and worker_id are
set to S and A, and completed_at is filled when missing; a file whose
subtask_id or worker_id names another subtask or agent is refused, naming
both. It is checked against the output schema before anything is written.
--done also drops the done marker that reports the subtask finished.
Prints the path written (and the marker's); on a postgres:// root, the
names tasks/<task>/outputs/<subtask>.json (and tasks/<task>/<marker>).

Work is never lost: a finished subtask's output is final (its subtask is
completed, or a done marker reporting it completed waits for the daemon),
and writing it again is refused (exit 4). Until then — the first attempt,
a subtask that failed or is being retried — the output a write replaces is
kept as outputs/history/<subtask>.v<N>.json.

Examples:
  workspaced output write --task t1 --subtask st_3 --agent worker_1 --file out.json
  workspaced output write --task t1 --subtask st_3 --agent worker_1 --file out.json --done
  echo '{"summary":"done"}' | workspaced output write --task t1 --subtask st_3 --agent worker_1 --file -

Exit codes: 0 ok, 1 failure (not JSON, schema-invalid output, a subtask_id or
worker_id that contradicts S or A), 2 usage, 3 task not found, 4 conflict
(the output is final) or the task's lock held past the lock timeout.
`

func cmdOutput(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "output", outputUsage, []subcommand{
		{"write", "write outputs/<subtask>.json", outputWrite},
	}, args)
}

func outputWrite(ctx context.Context, e *env, args []string) error {
	fs := newFlags("output write")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	subtask := fs.String("subtask", "", "subtask `ID`")
	agent := fs.String("agent", "", "the worker `AGENT` (default $WORKSPACE_AGENT)")
	file := fs.String("file", "", "read the output from `FILE` ('-' for stdin)")
	done := fs.Bool("done", false, "also drop the done marker for it")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(e, fs, outputUsage, args); err != nil {
		return err
	}
	*agent = agentOr(*agent, "")
	if err := need(fs, "subtask", "agent", "file"); err != nil {
		return err
	}
	data, err := readInput(e, *file)
	if err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "output write", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	write := func(ctx context.Context) (string, error) { return w.WriteOutput(ctx, id, *subtask, *agent, data) }
	var d *workspace.DoneRequest
	if *done {
		d = &workspace.DoneRequest{TaskID: id, Agent: *agent, SubtaskID: *subtask}
	}
	return finishProduct(ctx, e, w, id, write, d, waitFlag{}, *asJSON, &written{})
}
