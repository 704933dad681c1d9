package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/workspaced/workspaced/bench"
)

const benchUsage = `workspaced bench — measure the workload against the disk's own floor.

Usage:
  workspaced bench [--quick] [--json] [--dir DIR]

Runs a self-contained workload on temporary workspaces made in DIR (default:
the directory holding the root, so the same filesystem) and removed after:

  floor     a 1 KiB temporary write + fsync + rename + directory fsync
  env       store / get / update / list at 1 KiB and 100 KiB
  daemon    done markers from 1 agent process (one at a time) and from 8
            and 32 agent processes at once, marker written → state.json
            reflecting it (p50, p99, markers/s)
  idle      a real 'workspaced serve' on a tree of 10,000 tasks (1,000
            with --quick): CPU used over idle seconds, and its RSS

Each figure is printed beside the floor measured in the same run: latency
as a multiple of the floor's p50, throughput as a multiple of what one
durable write per marker would allow.

Examples:
  workspaced bench --quick
  workspaced --root /srv/agents bench --json > bench.json

Exit codes: 0 ok, 1 failure, 2 usage.
`

func cmdBench(ctx context.Context, e *env, args []string) error {
	fs := newFlags("bench")
	quick := fs.Bool("quick", false, "fewer iterations and a 1,000-task tree")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	dir := fs.String("dir", "", "where to make the temporary workspaces (default: beside the root)")
	// Agent mode: the workload re-executes this binary as its agents.
	agentRoot := fs.String("agent-root", "", "")
	agentTask := fs.String("agent-task", "", "")
	agentName := fs.String("agent-name", "", "")
	if err := parse(e, fs, benchUsage, args); err != nil {
		return err
	}
	if *agentRoot != "" {
		return bench.AgentMain(*agentRoot, *agentTask, *agentName, e.stdin, e.stdout)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this binary: %w", err)
	}
	if *dir == "" {
		abs, err := filepath.Abs(e.root)
		if err != nil {
			return err
		}
		*dir = filepath.Dir(abs)
	}
	opt := bench.Options{Dir: *dir, Quick: *quick, AgentCmd: []string{exe, "bench"}, ServeCmd: []string{exe, "--root"}}
	if !*asJSON {
		opt.Progress = e.stderr
	}
	rep, err := bench.Run(ctx, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, rep)
	}
	out := e.stdout
	fmt.Fprintf(out, "workspaced bench (%s)\n\n", map[bool]string{true: "quick", false: "full"}[*quick])
	rows := [][]string{row(rep.Floor)}
	for _, r := range rep.Results {
		rows = append(rows, row(r))
	}
	table(out, []string{"OPERATION", "OPS", "OPS/S", "P50 MS", "P99 MS", "VS FLOOR", "NOTE"}, rows)
	fmt.Fprintf(out, "\ndaemon idle with %d tasks: %.1f ms CPU over %.0f s, RSS %.1f MiB (targets: no CPU between events, RSS < 64 MiB)\n",
		rep.IdleTasks, rep.IdleCPUms, rep.IdleSeconds, rep.RSSMiB)
	for _, n := range rep.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	return nil
}

func row(r bench.Result) []string {
	return []string{r.Name, fmt.Sprint(r.Ops), fmt.Sprintf("%.0f", r.OpsPS), fmt.Sprintf("%.2f", r.P50), fmt.Sprintf("%.2f", r.P99),
		fmt.Sprintf("%.2f×", r.VsFloor), r.Note}
}
