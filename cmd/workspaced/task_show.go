package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

const taskShowUsage = `Usage:
  workspaced task show (--task ID | --thread X) [--json]

Shows task.json, a summary of state.json (status, phase, subtasks by
status), the current plan version and the number of env keys.

Examples:
  workspaced task show --task t1
  workspaced task show --thread th_solver      # the task this thread belongs to
  workspaced task show --task t1 --json | jq .state.status

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found.
`

// taskDetail is `task show --json`.
type taskDetail struct {
	Task        workspace.Task   `json:"task"`
	Status      string           `json:"status"`
	State       *workspace.State `json:"state"`
	PlanVersion int              `json:"plan_version"`
	PlanStatus  string           `json:"plan_status,omitempty"`
	EnvKeys     int              `json:"env_keys"`
	Threads     int              `json:"threads"`
}

func taskShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("task show")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (shows its task)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseArgs(e, fs, taskShowUsage, args); err != nil {
		return err
	}
	// `task show ID` is accepted as well as --task ID.
	if fs.NArg() == 1 && *task == "" && *thread == "" {
		*task = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageHint("task show", "unexpected argument %q", fs.Arg(0))
	}
	w, id, err := e.openTask(ctx, "task show", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.GetTask(ctx, id)
	if err != nil {
		return err
	}
	d := taskDetail{Task: t, Status: "new"}
	if st, err := w.ReadState(ctx, id); err == nil {
		d.State, d.Status = &st, st.Status
	} else if !errors.Is(err, workspace.ErrNotFound) {
		fmt.Fprintf(e.stderr, "workspaced: warning: %v\n", err)
	}
	// The plan is read only when the state does not say its version and
	// status: a plan of 10,000 subtasks takes tens of ms to decode.
	if d.State == nil || d.State.PlanStatus == "" || d.State.PlanVersion == 0 {
		if p, err := w.ReadPlan(ctx, id, 0); err == nil {
			d.PlanVersion, d.PlanStatus = p.Version, p.Status
		} else if !errors.Is(err, workspace.ErrNotFound) {
			fmt.Fprintf(e.stderr, "workspaced: warning: %v\n", err)
		}
	}
	if d.State != nil && d.State.PlanStatus != "" {
		// The state's word, on the version it tracks: plan.json may be
		// newer (a draft, an amendment awaiting review, one refused).
		d.PlanStatus = d.State.PlanStatus
		if d.State.PlanVersion > 0 {
			d.PlanVersion = d.State.PlanVersion
		}
	}
	items, err := w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: id})
	if err != nil {
		return err
	}
	d.EnvKeys = len(items)
	threads, err := w.ListThreads(ctx, id)
	if err != nil {
		fmt.Fprintf(e.stderr, "workspaced: warning: %v\n", err)
	}
	d.Threads = len(threads)
	if *asJSON {
		return printTaskDetail(e.stdout, d)
	}
	rows := [][]string{
		{"id:", t.ID},
		{"description:", cut(t.Description, 200)},
	}
	if t.Context != "" {
		rows = append(rows, []string{"context:", cut(t.Context, 200)})
	}
	for _, c := range t.Constraints {
		rows = append(rows, []string{"constraint:", cut(c, 200)})
	}
	if t.Priority != "" {
		rows = append(rows, []string{"priority:", t.Priority})
	}
	rows = append(rows, []string{"submitted by:", t.SubmittedBy}, []string{"created:", shortTime(t.CreatedAt)})
	status := d.Status
	if d.State != nil && d.State.Phase != "" {
		status += " (phase " + d.State.Phase + ")"
	}
	rows = append(rows, []string{"status:", status})
	plan := "none"
	if d.PlanVersion > 0 {
		plan = "v" + strconv.Itoa(d.PlanVersion)
		if d.PlanStatus != "" {
			plan += " (" + d.PlanStatus + ")"
		}
		if d.State != nil && d.State.Amendment != nil {
			plan += fmt.Sprintf("; amendment v%d awaits review", d.State.Amendment.Version)
		}
	}
	rows = append(rows, []string{"plan:", plan})
	if d.State != nil {
		rows = append(rows, []string{"subtasks:", subtaskSummary(d.State)})
		if d.State.RevisionCount > 0 {
			rows = append(rows, []string{"revisions:", strconv.Itoa(d.State.RevisionCount)})
		}
		errs := workspace.TaskErrors(d.State.Errors)
		if n := len(errs); n > 0 {
			rows = append(rows, []string{"errors:", fmt.Sprintf("%d, last: %s", n, cut(errs[n-1].Message, 120))})
		}
		if n := len(d.State.Errors) - len(errs); n > 0 {
			// Lost races are normal: each is the verdict on a marker.
			rows = append(rows, []string{"claims refused:", fmt.Sprintf("%d (see the journal and the timeline's claim_refused)", n)})
		}
		rows = append(rows, []string{"updated:", shortTime(d.State.LastUpdated)})
	}
	rows = append(rows, []string{"env keys:", strconv.Itoa(d.EnvKeys)}, []string{"threads:", strconv.Itoa(d.Threads)})
	table(e.stdout, nil, rows)
	return nil
}

// subtaskSummary counts subtasks by status: "3 (1 completed, 2 pending)".
func subtaskSummary(st *workspace.State) string {
	if len(st.Subtasks) == 0 {
		return "0"
	}
	counts := map[string]int{}
	for _, s := range st.Subtasks {
		counts[s.Status]++
	}
	var parts []string
	for _, s := range []string{"completed", "in_progress", "pending", "blocked", "failed"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			delete(counts, s)
		}
	}
	var rest []string
	for s := range counts {
		rest = append(rest, s)
	}
	sort.Strings(rest)
	for _, s := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	return fmt.Sprintf("%d (%s)", len(st.Subtasks), strings.Join(parts, ", "))
}

// printTaskDetail is printJSON(w, d), byte for byte, its state written
// by workspace.AppendStateIndent: encoding/json takes tens of ms to
// write the state of a task of 10,000 subtasks. Where that fails,
// encoding/json writes it all, or says why it cannot.
func printTaskDetail(w io.Writer, d taskDetail) error {
	st := d.State
	if st == nil {
		return printJSON(w, d)
	}
	d.State = nil
	rest, err := atomicfile.Marshal(d)
	d.State = st
	// The state is the document's third entry, at depth 1: no string nor
	// deeper entry holds these bytes.
	const at = "\n  \"state\": null,\n"
	i := bytes.Index(rest, []byte(at))
	if err != nil || i < 0 {
		return printJSON(w, d)
	}
	out := make([]byte, 0, len(rest)+200*len(st.Subtasks)+4096)
	out = append(out, rest[:i+len(at)-len("null,\n")]...)
	if out, err = workspace.AppendStateIndent(out, st, "  "); err != nil {
		return printJSON(w, d)
	}
	out = append(out, rest[i+len(at)-len(",\n"):]...)
	_, err = w.Write(out)
	return err
}

// printStateJSON is printJSON(w, st), byte for byte, written by
// workspace.AppendStateIndent (`state show --json`).
func printStateJSON(w io.Writer, st *workspace.State) error {
	out, err := workspace.AppendStateIndent(nil, st, "")
	if err != nil {
		return printJSON(w, st)
	}
	_, err = w.Write(append(out, '\n'))
	return err
}
