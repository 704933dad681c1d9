package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const stateUsage = `workspaced state — show or rebuild a task's state.json.

Usage:
  workspaced state show (--task T | --thread X) [--json]
  workspaced state rebuild (--task T | --thread X) [--json]

state.json is written by the daemon only ('workspaced serve'); agents read
it and drop markers. 'show' prints it; 'rebuild' derives it again from
task.json and the journal alone and prints a diff when state.json differs.

Examples:
  workspaced state show --task t1
  workspaced state rebuild --task t1

Exit codes: 0 ok (rebuild: state.json matches), 1 failure (rebuild: it
differs), 2 usage, 3 no such task or no state.json yet.
`

func cmdState(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "state", stateUsage, []subcommand{
		{"show", "print a task's state", stateShow},
		{"rebuild", "derive the state from task.json and the journal; diff", stateRebuild},
	}, args)
}

const stateShowUsage = `Usage:
  workspaced state show (--task T | --thread X) [--json]

Prints the task's state.json: status, phase, plan, subtasks, checkpoints,
workers and errors (--json: the file itself, as the daemon wrote it).

Examples:
  workspaced state show --task t1
  workspaced state show --task t1 --json | jq '.subtasks | map_values(.status)'

Exit codes: 0 ok, 1 failure (state.json invalid: see 'workspaced backup'),
2 usage, 3 no such task or no state.json yet (is the daemon running?).
`

func stateShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("state show")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "a thread `ID` of the task")
	asJSON := fs.Bool("json", false, "print state.json")
	if err := parse(e, fs, stateShowUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "state show", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.GetTask(ctx, id); err != nil {
		return err
	}
	st, err := w.ReadState(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printStateJSON(e.stdout, &st)
	}
	printState(e.stdout, st)
	return nil
}

func printState(out io.Writer, st workspace.State) {
	fmt.Fprintf(out, "task:         %s\n", st.TaskID)
	fmt.Fprintf(out, "status:       %s (%s)\n", st.Status, st.Phase)
	if st.PlanID != "" {
		fmt.Fprintf(out, "plan:         %s v%d, %s\n", st.PlanID, st.PlanVersion, st.PlanStatus)
	} else {
		fmt.Fprintf(out, "plan:         %s\n", st.PlanStatus)
	}
	if st.StartedAt != nil {
		fmt.Fprintf(out, "started:      %s\n", shortTime(*st.StartedAt))
	}
	if st.CompletedAt != nil {
		fmt.Fprintf(out, "finished:     %s\n", shortTime(*st.CompletedAt))
	}
	fmt.Fprintf(out, "updated:      %s\n", shortTime(st.LastUpdated))
	fmt.Fprintf(out, "revisions:    %d\n", st.RevisionCount)
	fmt.Fprintf(out, "journal_seq:  %d\n", st.JournalSeq)
	if len(st.Subtasks) > 0 {
		fmt.Fprintln(out, "\nSubtasks:")
		var rows [][]string
		for _, id := range slices.Sorted(maps.Keys(st.Subtasks)) {
			s := st.Subtasks[id]
			note := s.Error
			if len(s.BlockedBy) > 0 {
				note = "blocked by " + strings.Join(s.BlockedBy, ", ")
			} else if s.Output != "" && note == "" {
				note = s.Output
			}
			rows = append(rows, []string{"  " + id, s.Status, s.Worker, strconv.Itoa(s.Attempts), cut(note, 60)})
		}
		table(out, []string{"  ID", "STATUS", "WORKER", "ATTEMPTS", "NOTE"}, rows)
	}
	if len(st.Checkpoints) > 0 {
		fmt.Fprintln(out, "\nCheckpoints:")
		var rows [][]string
		for _, id := range slices.Sorted(maps.Keys(st.Checkpoints)) {
			c := st.Checkpoints[id]
			rows = append(rows, []string{"  " + id, c.Status, c.Review})
		}
		table(out, []string{"  ID", "STATUS", "REVIEW"}, rows)
	}
	if len(st.Workers) > 0 {
		fmt.Fprintln(out, "\nWorkers:")
		var rows [][]string
		for _, id := range slices.Sorted(maps.Keys(st.Workers)) {
			wk := st.Workers[id]
			rows = append(rows, []string{"  " + id, wk.Status, wk.CurrentTask})
		}
		table(out, []string{"  AGENT", "STATUS", "CURRENT"}, rows)
	}
	errs := workspace.TaskErrors(st.Errors)
	var refused []workspace.StateError
	for _, er := range st.Errors {
		if er.Kind == workspace.ErrorClaimRefused {
			refused = append(refused, er)
		}
	}
	printStateErrors(out, "Errors", errs)
	printStateErrors(out, "Claims refused", refused)
}

// printStateErrors prints a list of the state's errors under title.
func printStateErrors(out io.Writer, title string, errs []workspace.StateError) {
	if len(errs) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s (%d):\n", title, len(errs))
	for _, er := range errs {
		who := er.Agent
		if er.SubtaskID != "" {
			who += " " + er.SubtaskID
		}
		fmt.Fprintf(out, "  #%d %s %s: %s\n", er.Seq, shortTime(er.At), strings.TrimSpace(who), er.Message)
	}
}

const stateRebuildUsage = `Usage:
  workspaced state rebuild (--task T | --thread X) [--json]

Derives the task's state from task.json and the journal alone (the records
in tasks/<id>/journal/, which carry the plans and reviews they applied) and
compares it with state.json: it prints "matches" and exits 0, or prints a
line diff of the two as canonical JSON (- state.json, + rebuilt) and exits
1, like diff(1). With no state.json yet it prints the rebuilt state and
exits 1. --json prints the rebuilt state instead, with the same exit code.
Nothing is written: the daemon is the only writer of state.json, and it
repairs a corrupt one itself on its next start (from the newest valid
backup plus the journal); to put a backup back by hand see 'workspaced
backup restore'.

A task retention has summarised (finished, cut down to task.json,
state.json and events.log) has no journal left to rebuild from: rebuild
says so and checks what is left — that state.json is valid and finished,
and that events.log ends the task the way the state says — exiting 0 when
both hold and 1 when not. --json prints that report.

On a postgres:// or sqlite: root the journal rows are folded through the
state machine as the daemon folds them and compared with the state row,
with the same output and exit codes.

Examples:
  workspaced state rebuild --task t1
  workspaced state rebuild --task t1 --json > /tmp/t1-state.json
  workspaced state rebuild --task t1 >/dev/null || echo "state.json differs from the journal"

Exit codes: 0 state.json matches (a summarised task: what is left checks out),
1 it differs or is missing, or a failure (an unreadable journal record),
2 usage, 3 no such task.
`

func stateRebuild(ctx context.Context, e *env, args []string) error {
	fs := newFlags("state rebuild")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "a thread `ID` of the task")
	asJSON := fs.Bool("json", false, "print the rebuilt state")
	if err := parse(e, fs, stateRebuildUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "state rebuild", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	c, err := service.CheckState(ctx, w, id)
	if err != nil {
		return err
	}
	if c.Summary != nil {
		return printSummary(e, c.Summary, *asJSON)
	}
	old, from := "state of task "+id, "the task and its journal"
	if c.OnTree {
		old, from = e.display(workspace.TaskDir(id)+"/state.json"), "task.json and journal/"
	}
	return compareRebuilt(e, c.Rebuilt, c.Written, c.WrittenErr, old, from, *asJSON)
}

// compareRebuilt prints the outcome of state rebuild: rebuilt against the
// state written (oldData, or readErr reading it), named old; from names
// what rebuilt was derived from.
func compareRebuilt(e *env, rebuilt workspace.State, oldData []byte, readErr error, old, from string, asJSON bool) error {
	newData, err := atomicfile.Marshal(rebuilt)
	if err != nil {
		return err
	}
	missing := errors.Is(readErr, workspace.ErrNotFound)
	if readErr != nil && !missing {
		return readErr
	}
	differs := &exitError{code: exitFailure}
	if asJSON {
		if _, err := e.stdout.Write(newData); err != nil {
			return err
		}
		if missing || string(oldData) != string(newData) {
			return differs
		}
		return nil
	}
	switch {
	case missing:
		fmt.Fprintf(e.stdout, "no state.json yet; the journal gives (journal_seq %d):\n", rebuilt.JournalSeq)
		if _, err := e.stdout.Write(newData); err != nil {
			return err
		}
		return differs
	case string(oldData) == string(newData):
		fmt.Fprintf(e.stdout, "state.json matches the journal (journal_seq %d)\n", rebuilt.JournalSeq)
		return nil
	}
	fmt.Fprintf(e.stdout, "--- %s\n+++ rebuilt from %s (journal_seq %d)\n", old, from, rebuilt.JournalSeq)
	writeDiff(e.stdout, splitLines(string(oldData)), splitLines(string(newData)))
	return differs
}

// printSummary prints what state rebuild could still check of a task
// retention has summarised; a problem fails the command.
func printSummary(e *env, c *service.SummaryCheck, asJSON bool) error {
	var failed error
	if len(c.Problems) > 0 {
		failed = &exitError{code: exitFailure}
	}
	if asJSON {
		if err := printJSON(e.stdout, c); err != nil {
			return err
		}
		return failed
	}
	fmt.Fprintf(e.stdout, "task %s is summarised: retention kept only task.json, state.json and events.log,\n", c.TaskID)
	fmt.Fprintln(e.stdout, "so its journal is gone and the state cannot be rebuilt from it. What is left:")
	if c.StateValid {
		fmt.Fprintf(e.stdout, "  state.json  valid: %s, journal_seq %d\n", c.Status, c.JournalSeq)
	}
	if c.EventsAgree {
		fmt.Fprintf(e.stdout, "  events.log  ends the task with %s (%s), as the state says\n", c.FinalEvent, shortTime(c.FinalAt))
	}
	for _, p := range c.Problems {
		fmt.Fprintf(e.stdout, "  PROBLEM     %s\n", p)
	}
	return failed
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// writeDiff prints a line diff of a and b (longest common subsequence),
// with three lines of context around each change and "@@" between hunks.
func writeDiff(w io.Writer, a, b []string) {
	type op struct {
		kind byte // ' ', '-', '+'
		line string
	}
	var ops []op
	if len(a)*len(b) > 16<<20 {
		// Too big to align: everything old out, everything new in.
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
	} else {
		n, m := len(a), len(b)
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && a[i] == b[j]:
				ops = append(ops, op{' ', a[i]})
				i++
				j++
			case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
				ops = append(ops, op{'+', b[j]})
				j++
			default:
				ops = append(ops, op{'-', a[i]})
				i++
			}
		}
	}
	const ctx = 3
	show := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind != ' ' {
			for x := max(0, k-ctx); x <= min(len(ops)-1, k+ctx); x++ {
				show[x] = true
			}
		}
	}
	gap := false
	for k, o := range ops {
		if !show[k] {
			gap = true
			continue
		}
		if gap || k == 0 {
			fmt.Fprintln(w, "@@")
			gap = false
		}
		fmt.Fprintf(w, "%c%s\n", o.kind, o.line)
	}
}
