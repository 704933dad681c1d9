package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const cleanupUsage = `workspaced cleanup — prune finished tasks by the retention policy.

Usage:
  workspaced cleanup [--dry-run] [--json] [--full-days N] [--summary-days N] [--history-keep N]

A finished task (completed, failed or cancelled) is kept whole for
full_days after its state's completed_at, then cut down to its summary
(task.json, the final state.json and events.log) until summary_days, then
its directory is removed. Active tasks are never touched, whatever their
age; a finished task whose completed_at is missing, malformed or in the
future is kept. Age counts from completed_at, never from file times.

Memory history is pruned too: of each global or agent memory entry's
earlier versions (workspaced memory history), the history_keep newest are
kept and older ones removed.

The policy comes from workspace.json ("retention": {"full_days": 7,
"summary_days": 30, "history_keep": 100}); the flags override it. A policy that would destroy
more than anyone could mean (summary_days below 1 or below full_days, a
negative value) is refused before anything is read.

Each task is pruned under its lock (tasks/<id>/.locks/task.lock), taken
without waiting: a busy task — the daemon applying markers, an agent
holding the lock — is skipped and reported with its holder, and pruned by a
later run. A crash at any point leaves every task whole, summarised or gone;
the next run finishes what a crashed one left. Friction entries of removed
tasks stay, with those task ids anonymised (anon_<12 hex>).

A task directory holding nothing but lock files (tasks/<id>/.locks/…, left
by a process that took the lock of a task already removed) is removed too,
whatever its age, and reported as removed — once none of its locks is held:
each is taken without waiting first, and a held one skips it as busy. A
directory holding anything else is never taken for one.

Prints one line per task (what was done and why) and a total; --dry-run
prints what would be done and changes nothing. --json prints the whole
report instead. Safe for cron: if another cleanup (or the daemon's) is
running, it waits up to the lock timeout of workspace.json for it.

Examples:
  workspaced cleanup --dry-run
  workspaced --root /srv/agents cleanup --json | jq '.counts'
  workspaced cleanup --full-days 3 --summary-days 14
  # crontab: every night at 03:17
  17 3 * * * WORKSPACE_ROOT=/srv/agents workspaced cleanup >>/var/log/workspaced-cleanup.log 2>&1

Exit codes: 0 ok (also when busy tasks were skipped), 1 a task could not be
pruned or the friction log not anonymised (the report says which), 2 usage
or a nonsensical policy, 3 no workspace, 4 another cleanup still running at
the lock timeout.
`

// cleanupReport is `cleanup --json`: the pruner's report, the policy
// applied and what was done to the friction log.
type cleanupReport struct {
	retention.Report
	Policy retention.Policy `json:"policy"`
	// FrictionAnonymized counts the friction entries changed by
	// anonymising removed task ids.
	FrictionAnonymized int `json:"friction_anonymized"`
}

func cmdCleanup(ctx context.Context, e *env, args []string) error {
	fs := newFlags("cleanup")
	dryRun := fs.Bool("dry-run", false, "print what would be done; change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fullDays := fs.Int("full-days", 0, "keep a finished task whole for `N` days (default from workspace.json, else 7)")
	summaryDays := fs.Int("summary-days", 0, "keep a finished task's summary until `N` days (default from workspace.json, else 30)")
	historyKeep := fs.Int("history-keep", 0, "keep the `N` newest earlier versions of each memory entry (default from workspace.json, else 100)")
	if err := parse(e, fs, cleanupUsage, args); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	s := w.Settings()
	policy := retention.Policy{FullDays: s.Retention.FullDays, SummaryDays: s.Retention.SummaryDays, HistoryKeep: s.Retention.HistoryKeep}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "full-days":
			policy.FullDays = *fullDays
		case "summary-days":
			policy.SummaryDays = *summaryDays
		case "history-keep":
			policy.HistoryKeep = *historyKeep
		}
	})
	if err := retention.Validate(policy); err != nil {
		hint := "set --full-days and --summary-days (or workspace.json retention) so that 0 <= full_days <= summary_days and summary_days >= 1"
		if policy.HistoryKeep < 0 {
			hint = "give --history-keep (or workspace.json retention.history_keep) 0 or more; 0 keeps the default, 100"
		}
		return &usageError{msg: fmt.Sprintf("cleanup: %v", err), hint: hint}
	}

	// One write per line would cost a system call per task; the buffer
	// still streams (every 4 KiB), and is flushed before anything goes to
	// stderr.
	stdout := bufio.NewWriter(e.stdout)
	defer stdout.Flush()
	out := &cleanupOutput{e: e, stdout: stdout, dryRun: *dryRun}
	progress := out.progress
	if *asJSON {
		progress = nil
	}
	rep, err := service.Cleanup(ctx, w, service.CleanupRequest{
		Policy: policy,
		DryRun: *dryRun,
		// Text output streams one line per task and keeps nothing, so
		// memory stays flat in the number of tasks; --json needs the
		// lists.
		DiscardDecisions: !*asJSON,
		OnProgress:       progress,
		LockWait:         time.Duration(s.LockTimeout),
	})
	if err != nil {
		stdout.Flush()
		printCleanupErrors(e.stderr, rep.FrictionErrors)
		return cleanupErr(err)
	}
	if *asJSON {
		full := cleanupReport{Report: rep.Report, Policy: policy, FrictionAnonymized: rep.FrictionAnonymized}
		full.Errors = append(full.Errors, rep.FrictionErrors...)
		for _, l := range []*[]retention.Decision{&full.Kept, &full.Summarized, &full.Removed, &full.Skipped} {
			if *l == nil {
				*l = []retention.Decision{}
			}
		}
		if err := printJSON(stdout, full); err != nil {
			return err
		}
	} else {
		out.summary(rep, policy)
	}
	if err := stdout.Flush(); err != nil {
		return fmt.Errorf("cleanup: write the report: %w", err)
	}
	if n := len(rep.Errors) + len(rep.FrictionErrors); n > 0 {
		return fmt.Errorf("cleanup: %d error(s); see the report above", n)
	}
	return nil
}

// cleanupErr maps the pruner's errors to the workspace kinds the exit codes
// come from.
func cleanupErr(err error) error {
	switch {
	case errors.Is(err, retention.ErrInvalidPolicy):
		return &usageError{msg: "cleanup: " + err.Error()}
	case errors.Is(err, retention.ErrCleanupRunning), errors.Is(err, locking.ErrLocked):
		return &workspace.Error{Kind: workspace.ErrLocked, Op: "cleanup", Err: err,
			Hint: "another cleanup (cron or the daemon) is still running; run again later"}
	}
	return fmt.Errorf("cleanup: %w", err)
}

// cleanupOutput prints each outcome as the pruner reports it, and the
// totals.
type cleanupOutput struct {
	e      *env
	stdout *bufio.Writer
	dryRun bool
}

func (o *cleanupOutput) progress(d retention.Decision) {
	fmt.Fprintf(o.stdout, "%-18s %s: %s\n", o.verb(d.Action), d.TaskID, d.Reason)
}

// verb says what happened to a task, or in a dry run what would.
func (o *cleanupOutput) verb(a retention.Action) string {
	switch a {
	case retention.Keep:
		return "kept"
	case retention.Summarize:
		if o.dryRun {
			return "would summarize"
		}
		return "summarized"
	case retention.Remove:
		if o.dryRun {
			return "would remove"
		}
		return "removed"
	}
	return "skipped"
}

// summary prints the totals, what was recovered and every error.
func (o *cleanupOutput) summary(rep service.Cleaned, p retention.Policy) {
	w := o.stdout
	for _, r := range rep.Recovered {
		fmt.Fprintf(w, "%-18s %s\n", "recovered", r)
	}
	c := rep.Counts
	prefix := "cleanup"
	if o.dryRun {
		prefix = "cleanup (dry run, nothing changed)"
	}
	fmt.Fprintf(w, "%s: %d kept, %d summarized, %d removed, %d skipped (full_days %d, summary_days %d)\n",
		prefix, c.Kept, c.Summarized, c.Removed, c.Skipped, p.FullDays, p.SummaryDays)
	if !o.dryRun && rep.FrictionAnonymized > 0 {
		fmt.Fprintf(w, "friction: anonymised the removed tasks in %d entries\n", rep.FrictionAnonymized)
	}
	if n := rep.MemoryExpired; n > 0 {
		verb := "removed"
		if o.dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(w, "memory: %s %d expired namespaced item(s)\n", verb, n)
	}
	if n := rep.HistoryPruned; n > 0 {
		verb := "removed"
		if o.dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(w, "memory history: %s %d earlier version(s) past the %d kept of each entry\n", verb, n, p.KeptVersions())
	}
	o.stdout.Flush()
	printCleanupErrors(o.e.stderr, rep.Errors, rep.FrictionErrors)
}

func printCleanupErrors(w io.Writer, lists ...[]string) {
	for _, l := range lists {
		for _, msg := range l {
			fmt.Fprintf(w, "error: %s\n", msg)
		}
	}
}
