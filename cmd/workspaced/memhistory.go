package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/workspaced/workspaced/service"
)

const memHistoryUsage = `Usage:
  workspaced memory history --scope global|agent [--agent A] --key K [--json]

Prints the kept versions of a memory entry, oldest first: a write that
replaced the entry, or a delete that removed it, kept the version it
replaced, with who wrote it, when, and its value (--json: the whole
entries). The live entry is not among them: 'memory get' reads it. The
global memory and each agent's keep their history; a task's env data and
a thread's session do not.

Examples:
  workspaced memory history --scope global --key plan
  workspaced memory history --scope agent --agent solver --key notes --json

Exit codes: 0 ok (none kept: "no earlier versions"), 1 failure (bad key,
a scope that keeps no history), 2 usage.
`

// memHistory prints the kept versions of a memory entry.
func memHistory(ctx context.Context, e *env, args []string) error {
	f := &entryFlags{cmd: "memory", verb: "history", fs: newFlags("memory history")}
	f.fs.StringVar(&f.scope, "scope", "", "the scope, `global|agent` (env is global, po is agent)")
	f.fs.StringVar(&f.agent, "agent", "", "with --scope agent: the `AGENT` whose memory it is (default $WORKSPACE_AGENT)")
	f.fs.StringVar(&f.key, "key", "", "entry `KEY`")
	f.fs.BoolVar(&f.json, "json", false, "print the kept entries as JSON")
	if err := parse(e, f.fs, memHistoryUsage, args); err != nil {
		return err
	}
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	versions, err := service.EntryHistory(ctx, w, s, f.key)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(e.stdout, versions)
	}
	if len(versions) == 0 {
		fmt.Fprintln(e.stdout, "no earlier versions")
		return nil
	}
	rows := make([][]string, len(versions))
	for i, v := range versions {
		rows[i] = []string{strconv.Itoa(v.Version), v.UpdatedAt.UTC().Format("2006-01-02 15:04:05"), v.StoredBy, cut(string(v.Value), 60)}
	}
	table(e.stdout, []string{"VERSION", "WRITTEN", "BY", "VALUE"}, rows)
	return nil
}
