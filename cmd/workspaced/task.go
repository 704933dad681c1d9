package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

const taskUsage = `workspaced task — create, list and show tasks (tasks/<id>/task.json).

Usage:
  workspaced task create --description TEXT [--id ID] [--context TEXT] [--constraint TEXT]...
                         [--priority P] [--submitted-by WHO] [--to AGENT]
  workspaced task list [--json]
  workspaced task show (--task ID | --thread X) [--json]
  workspaced task cancel (--task ID | --thread X) [--reason TEXT] [--wait [DUR]]

Examples:
  id=$(workspaced task create --description "Add JWT auth to the REST API")
  workspaced task list
  workspaced task show --task "$id" --json

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict (the id exists).
`

func cmdTask(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "task", taskUsage, []subcommand{
		{"create", "create a task; prints its id", taskCreate},
		{"list", "every task with its status", taskList},
		{"show", "one task: task.json, state summary, plan version, env keys", taskShow},
		{"cancel", "cancel a task (through a done marker the daemon applies)", taskCancel},
	}, args)
}

const taskCreateUsage = `Usage:
  workspaced task create --description TEXT [--id ID] [--context TEXT] [--constraint TEXT]...
                         [--priority P] [--submitted-by WHO] [--to AGENT] [--json]

Writes tasks/<id>/task.json (immutable), the root thread and a task_created
event, and prints only the id (--json: the task as written). Without --id a
fresh id task_<12 hex> is made.

Examples:
  workspaced task create --description "Add JWT auth to the REST API"
  workspaced task create --id arc-001 --description "Solve ARC puzzle training-001" --to solver
  workspaced task create --description "Refactor" --constraint "no new deps" --constraint "keep the API" --priority high

Exit codes: 0 ok, 1 failure (bad id, empty description), 2 usage, 4 conflict (a task with this id exists).
`

func taskCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("task create")
	var req workspace.NewTaskRequest
	var constraints stringList
	fs.StringVar(&req.Description, "description", "", "what the task is, in `TEXT`")
	fs.StringVar(&req.ID, "id", "", "task `ID` (default: generated)")
	fs.StringVar(&req.Context, "context", "", "background `TEXT`")
	fs.Var(&constraints, "constraint", "a constraint `TEXT` (repeatable)")
	fs.StringVar(&req.Priority, "priority", "", "`P`riority, e.g. low, normal, high")
	fs.StringVar(&req.SubmittedBy, "submitted-by", "", "`WHO` submits it (default human)")
	fs.StringVar(&req.To, "to", "", "the `AGENT` the root thread is addressed to (default coordinator)")
	asJSON := fs.Bool("json", false, "print the task as written")
	if err := parseNeeding(e, fs, taskCreateUsage, args, "description"); err != nil {
		return err
	}
	req.Constraints = constraints
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.CreateTask(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ID)
	return nil
}

const taskListUsage = `Usage:
  workspaced task list [--json]

Lists every task, oldest first: its id, its status (from state.json, or
"new" before the daemon has written one), when it was created, and its
description. With --json it reads the tasks as a stream, so memory stays
flat however many there are; entries of tasks/ that are no task directory are named
on stderr. On a tree only the head of each state.json is read (it parses;
task_id, status and journal_seq are there and sound); 'workspaced
validate' checks every state whole.

Examples:
  workspaced task list
  workspaced task list --json | jq -r '.[] | select(.status=="executing") | .id'

Exit codes: 0 ok, 1 failure, 2 usage, 3 no workspace.
`

// taskRow is one task of `task list --json`.
type taskRow struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	Phase       string    `json:"phase,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	Description string    `json:"description"`
	Priority    string    `json:"priority,omitempty"`
	SubmittedBy string    `json:"submitted_by,omitempty"`
	Error       string    `json:"error,omitempty"`
}

func taskList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("task list")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := parse(e, fs, taskListUsage, args); err != nil {
		return err
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	return printTaskList(ctx, e, st, *asJSON)
}

// printTaskList prints the tasks of st as task list does.
func printTaskList(ctx context.Context, e *env, st workspace.Store, asJSON bool) error {
	// --json makes two passes, so that memory stays flat however many
	// tasks there are: the first reads each task's definition for the
	// order (by created_at, then id) and keeps only that; the second reads
	// each task again, with its state, and prints it at once. The table
	// keeps every row's cells anyway, so it reads each task once. On a tree the
	// first pass reads through one handle of tasks/, and the entries of
	// tasks/ that are no task directory are named.
	var (
		ids []string
		err error
	)
	var getTask func(id string) (workspace.Task, error)
	readRow := func(id string) (taskRow, bool) { return readTaskRow(ctx, st, id) }
	if w, ferr := fileTree("", st); ferr == nil {
		var skipped []workspace.Skipped
		if ids, skipped, err = w.TaskIDsReport(); err != nil {
			return err
		}
		for _, sk := range skipped {
			fmt.Fprintf(e.stderr, "workspaced: warning: skipped %s: %s\n", displayName(sk.File), sk.Reason)
		}
		if len(ids) > 0 {
			tasks, err := w.Root().Open("tasks")
			if err != nil {
				return err
			}
			defer tasks.Close()
			getTask = func(id string) (workspace.Task, error) { return w.ReadTaskAt(tasks, id) }
			readRow = func(id string) (taskRow, bool) { return readTaskRowIn(w, tasks, id) }
		}
	} else {
		if ids, err = st.TaskIDs(ctx); err != nil {
			return err
		}
		getTask = func(id string) (workspace.Task, error) { return st.GetTask(ctx, id) }
	}
	if !asJSON {
		return printTaskTable(ctx, e, ids, readRow)
	}
	type key struct {
		created time.Time
		i       int
	}
	keys := make([]key, len(ids))
	eachParallel(len(ids), func(i int) {
		if ctx.Err() != nil {
			return
		}
		t, err := getTask(ids[i])
		if errors.Is(err, workspace.ErrNotFound) {
			keys[i] = key{i: -1} // being created
			return
		}
		keys[i] = key{t.CreatedAt, i} // unreadable: zero time, first
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	order := slices.DeleteFunc(keys, func(k key) bool { return k.i < 0 })
	sort.SliceStable(order, func(i, j int) bool { return order[i].created.Before(order[j].created) })

	out := bufio.NewWriter(e.stdout)
	arr := newJSONArray(out, "")
	type read struct {
		r  taskRow
		ok bool
	}
	// Reading a task is most of the work: spread it over the processors,
	// printing in order.
	err = inOrder(ctx, len(order), runtime.GOMAXPROCS(0), func(i int) read {
		r, ok := readRow(ids[order[i].i])
		return read{r, ok}
	}, func(rd read) error {
		if !rd.ok {
			return nil // removed since the first pass
		}
		return arr.add(rd.r)
	})
	if err == nil {
		err = arr.end()
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// printTaskTable prints task list's table. A table needs all its rows
// before it prints (for its column widths), so each task is read once,
// on GOMAXPROCS goroutines, and only its cells are kept.
func printTaskTable(ctx context.Context, e *env, ids []string, readRow func(id string) (taskRow, bool)) error {
	type line struct {
		created time.Time
		cells   []string
	}
	lines := make([]line, len(ids))
	eachParallel(len(ids), func(i int) {
		if ctx.Err() != nil {
			return
		}
		r, ok := readRow(ids[i])
		if !ok {
			return // being created, or removed
		}
		desc := r.Description
		if r.Error != "" {
			desc = "error: " + r.Error
		}
		lines[i] = line{r.CreatedAt, []string{r.ID, r.Status, shortTime(r.CreatedAt), cut(desc, 60)}}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	lines = slices.DeleteFunc(lines, func(l line) bool { return l.cells == nil })
	// By created_at, ties (and unreadable tasks, first) in id order.
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].created.Before(lines[j].created) })
	out := bufio.NewWriter(e.stdout)
	if len(lines) == 0 {
		fmt.Fprintln(out, "no tasks")
	} else {
		cells := make([][]string, len(lines))
		for i, l := range lines {
			cells[i] = l.cells
		}
		table(out, []string{"ID", "STATUS", "CREATED", "DESCRIPTION"}, cells)
	}
	return out.Flush()
}

// readTaskRow reads one task's line of task list: task.json and, when the
// daemon has written one, state.json. false when the task has no
// task.json (being created, or removed).
func readTaskRow(ctx context.Context, w workspace.Reader, id string) (taskRow, bool) {
	t, err := w.GetTask(ctx, id)
	return taskRowOf(id, t, err, func() (string, string, error) {
		st, err := w.ReadState(ctx, id)
		return st.Status, st.Phase, err
	})
}

// readTaskRowIn is readTaskRow on a tree, through tasks, the open tasks/
// directory: the task directory is opened once, and only the head of
// state.json is read (workspace.ParseStateHead), not checked against the
// schema; `workspaced validate` is the full check. At 20,000 tasks the
// schema check of every state took seconds.
func readTaskRowIn(w *service.FileTree, tasks *os.File, id string) (taskRow, bool) {
	d, err := agentfile.OpenDirAt(tasks, id)
	if err != nil {
		return taskRowOf(id, workspace.Task{}, err, nil)
	}
	defer d.Close()
	t, err := w.ReadTaskIn(d, id)
	return taskRowOf(id, t, err, func() (string, string, error) {
		h, err := w.ReadStateHeadIn(d, id)
		return h.Status, h.Phase, err
	})
}

// taskRowOf is the line of task id, whose task.json read as t, err, and
// whose state's status and phase state reads.
func taskRowOf(id string, t workspace.Task, err error, state func() (status, phase string, err error)) (taskRow, bool) {
	r := taskRow{ID: id, Status: "new"}
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return r, false
	case err != nil:
		r.Status, r.Error = "unreadable", err.Error()
		return r, true
	}
	r.CreatedAt, r.Description, r.Priority, r.SubmittedBy = t.CreatedAt, t.Description, t.Priority, t.SubmittedBy
	status, phase, err := state()
	switch {
	case err == nil:
		r.Status, r.Phase = status, phase
	case !errors.Is(err, workspace.ErrNotFound):
		r.Error = err.Error()
		if r.CreatedAt.IsZero() {
			r.Status = "unreadable"
		}
	}
	return r, true
}

// shortTime prints a time for people, in UTC to the second.
func shortTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
