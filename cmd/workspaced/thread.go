package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

const threadUsage = `workspaced thread — delegation threads (tasks/<task>/threads/<id>.json).

A task is the root thread; every delegation from one agent to another is a
thread whose parent is the caller's thread.

Usage:
  workspaced thread new (--task T | --thread PARENT) [--id ID] [--parent P] --from A --to B --message M
  workspaced thread show|list|chain (--thread X | --task T) [--json]
  workspaced thread update --thread X [--status S] [--concern C] [--approach A] [--progress P]
                           [--buffers LIST] [--skill-tags LIST] [--primary-mode M] [--agent A] [--json]
  workspaced thread activate --thread X [--agent A] [--json]

Examples:
  workspaced thread new --task t1 --id th_solver --from coordinator --to solver --message "solve the puzzle"
  workspaced thread chain --thread th_solver        # human → coordinator → you (solver)
  workspaced thread update --thread th_solver --progress "found the symmetry" --buffers env:arc_task
  workspaced thread activate --thread th_observer   # the observer's other open threads become pending

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict (the id exists) or lock timeout.
`

func cmdThread(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "thread", threadUsage, []subcommand{
		{"new", "delegate: write a new thread; prints its id", threadNew},
		{"show", "one thread", threadShow},
		{"list", "every thread of a task", threadList},
		{"chain", "the delegation chain from the human down to a thread", threadChain},
		{"update", "change a thread's status, concern, approach, progress, buffers, skill tags, mode", threadUpdate},
		{"activate", "make a thread its agent's active one; its other open threads become pending", threadActivate},
	}, args)
}

// splitList parses a comma-separated flag value; "" is the empty list.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

const threadNewUsage = `Usage:
  workspaced thread new (--task T | --thread PARENT) [--id ID] [--parent P] --from A --to B --message M
                        [--concern C] [--approach A] [--buffers LIST] [--skill-tags LIST]
                        [--primary-mode M] [--status S] [--json]

Writes threads/<id>.json (id generated when omitted) with its parent (default
the task's root thread; --thread PARENT names both the task and the parent)
and prints the id. LIST is comma-separated.

Examples:
  workspaced thread new --task t1 --from coordinator --to solver --message "solve the puzzle"
  workspaced thread new --thread th_solver --id th_checker --from solver --to checker --message "check my answer"
  workspaced thread new --task t1 --from coordinator --to planner --message "plan it" --concern "the plan" --json
  workspaced thread new --thread th_solver --from solver --to observer --message "what patterns?" \
                        --skill-tags grids --primary-mode analysis

Exit codes: 0 ok, 1 failure (bad id), 2 usage, 3 task or parent not found, 4 the id exists.
`

func threadNew(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread new")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "parent thread `ID` (resolves the task)")
	var req workspace.NewThreadRequest
	fs.StringVar(&req.ID, "id", "", "thread `ID` (default: generated)")
	fs.StringVar(&req.ParentID, "parent", "", "parent thread `ID` (default: the root thread)")
	fs.StringVar(&req.From, "from", "", "the calling `AGENT`")
	fs.StringVar(&req.To, "to", "", "the called `AGENT`")
	fs.StringVar(&req.Message, "message", "", "what is asked (`TEXT`)")
	fs.StringVar(&req.Concern, "concern", "", "what the thread is about, one line of `TEXT`")
	fs.StringVar(&req.Approach, "approach", "", "how it is going about it, in `TEXT`")
	fs.StringVar(&req.Status, "status", "", "the status, `active|pending|done` (default active)")
	buffers := fs.String("buffers", "", "comma-separated `LIST` of buffers (env:<key>, memory:<scope>:<key>, file paths)")
	tags := fs.String("skill-tags", "", "comma-separated `LIST` of skill tags")
	fs.StringVar(&req.PrimaryMode, "primary-mode", "", "the kind of work (`MODE`, e.g. analysis): loads the skills of that mode")
	asJSON := fs.Bool("json", false, "print the thread as written")
	if err := parseNeeding(e, fs, threadNewUsage, args, "from", "to", "message"); err != nil {
		return err
	}
	if *thread != "" && req.ParentID != "" && req.ParentID != *thread {
		return usageHint("thread new", "--thread and --parent name different parents")
	}
	w, id, err := e.openTask(ctx, "thread new", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	req.TaskID = id
	if *thread != "" {
		req.ParentID = *thread
	}
	if *buffers != "" {
		req.Buffers = splitList(*buffers)
	}
	if *tags != "" {
		req.SkillTags = splitList(*tags)
	}
	t, err := w.NewThread(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ID)
	return nil
}

// threadTarget parses --thread/--task for show, chain and update: the
// thread is --thread (its task resolved, or --task), else the task's root
// thread.
func threadTarget(ctx context.Context, w workspace.Reader, cmd, task, thread string) (taskID, threadID string, err error) {
	taskID, err = resolveTask(ctx, w, cmd, task, thread)
	if err != nil {
		return "", "", err
	}
	threadID = thread
	if threadID == "" {
		threadID = taskID
	}
	return taskID, threadID, nil
}

const threadShowUsage = `Usage:
  workspaced thread show (--thread X | --task T) [--json]

Shows one thread (with --task alone, the task's root thread).

Examples:
  workspaced thread show --thread th_solver
  workspaced thread show --task t1 --json

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found.
`

func threadShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread show")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID`")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(e, fs, threadShowUsage, args); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	taskID, id, err := threadTarget(ctx, w, "thread show", *task, *thread)
	if err != nil {
		return err
	}
	t, err := w.GetThread(ctx, taskID, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, t)
	}
	rows := [][]string{{"id:", t.ID}, {"task:", t.TaskID}}
	if t.ParentID != "" {
		rows = append(rows, []string{"parent:", t.ParentID})
	}
	rows = append(rows, []string{"from → to:", t.From + " → " + t.To}, []string{"status:", t.Status}, []string{"created:", shortTime(t.CreatedAt)})
	if !t.UpdatedAt.IsZero() {
		rows = append(rows, []string{"updated:", shortTime(t.UpdatedAt)})
	}
	for _, f := range []struct{ name, v string }{{"message:", t.Message}, {"concern:", t.Concern}, {"approach:", t.Approach}, {"progress:", t.Progress}} {
		if f.v != "" {
			rows = append(rows, []string{f.name, cut(f.v, 200)})
		}
	}
	if len(t.Buffers) > 0 {
		rows = append(rows, []string{"buffers:", strings.Join(t.Buffers, ", ")})
	}
	if len(t.SkillTags) > 0 {
		rows = append(rows, []string{"skill tags:", strings.Join(t.SkillTags, ", ")})
	}
	if t.PrimaryMode != "" {
		rows = append(rows, []string{"primary mode:", t.PrimaryMode})
	}
	if !t.ActivatedAt.IsZero() {
		rows = append(rows, []string{"activated:", shortTime(t.ActivatedAt)})
	}
	table(e.stdout, nil, rows)
	return nil
}

const threadListUsage = `Usage:
  workspaced thread list (--task T | --thread X) [--json]

Lists every thread of the task, oldest first.

Examples:
  workspaced thread list --task t1
  workspaced thread list --thread th_solver --json   # the threads of th_solver's task

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found.
`

func threadList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread list")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (lists its task's threads)")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := parse(e, fs, threadListUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "thread list", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	threads, err := w.ListThreads(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, threads)
	}
	rows := make([][]string, len(threads))
	for i, t := range threads {
		parent := t.ParentID
		if parent == "" {
			parent = "-"
		}
		about := t.Concern
		if about == "" {
			about = t.Message
		}
		rows[i] = []string{t.ID, parent, t.From + " → " + t.To, t.Status, shortTime(t.CreatedAt), cut(about, 50)}
	}
	table(e.stdout, []string{"ID", "PARENT", "FROM → TO", "STATUS", "CREATED", "CONCERN"}, rows)
	return nil
}

const threadChainUsage = `Usage:
  workspaced thread chain (--thread X | --task T) [--json]

Prints the delegation chain from the human down to the thread, e.g.
"human → coordinator → solver → you (observer)"; --json prints the threads
from the root down.

Examples:
  workspaced thread chain --thread th_observer
  workspaced thread chain --thread th_observer --json | jq -r '.[].to'

Exit codes: 0 ok, 1 failure (a broken or cyclic chain), 2 usage, 3 not found.
`

func threadChain(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread chain")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID`")
	asJSON := fs.Bool("json", false, "print the threads as a JSON array")
	if err := parse(e, fs, threadChainUsage, args); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	taskID, id, err := threadTarget(ctx, w, "thread chain", *task, *thread)
	if err != nil {
		return err
	}
	chain, err := service.Chain(ctx, w, taskID, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, chain)
	}
	fmt.Fprintln(e.stdout, ops.FormatChain(chain))
	return nil
}

const threadUpdateUsage = `Usage:
  workspaced thread update (--thread X | --task T) [--status active|pending|done] [--concern C]
                           [--approach A] [--progress P] [--buffers LIST] [--skill-tags LIST]
                           [--primary-mode M] [--agent A] [--json]

Changes the working fields of a thread under its lock; fields not given are
kept. LIST is comma-separated and replaces the list ("" empties it).

Examples:
  workspaced thread update --thread th_solver --progress "rows done, columns next"
  workspaced thread update --thread th_solver --buffers env:arc_task,env:patterns --skill-tags grids
  workspaced thread update --thread th_solver --primary-mode analysis
  workspaced thread update --thread th_solver --status done --json

Exit codes: 0 ok, 1 failure (e.g. an unknown status), 2 usage, 3 not found, 4 lock timeout.
`

func threadUpdate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread update")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID`")
	status := fs.String("status", "", "the new status, `active|pending|done`")
	concern := fs.String("concern", "", "what the thread is about, one line of `TEXT`")
	approach := fs.String("approach", "", "how it is going about it, in `TEXT`")
	progress := fs.String("progress", "", "where the work stands, in `TEXT`")
	buffers := fs.String("buffers", "", "comma-separated `LIST` of buffers (replaces them)")
	tags := fs.String("skill-tags", "", "comma-separated `LIST` of skill tags (replaces them)")
	mode := fs.String("primary-mode", "", "the kind of work (`MODE`); \"\" clears it")
	agent := fs.String("agent", "", "the updating `AGENT` (default $WORKSPACE_AGENT, else \"cli\")")
	asJSON := fs.Bool("json", false, "print the thread as written")
	if err := parse(e, fs, threadUpdateUsage, args); err != nil {
		return err
	}
	var u workspace.ThreadUpdate
	str := func(name string, v *string, dst **string) {
		if flagSet(fs, name) {
			*dst = v
		}
	}
	str("status", status, &u.Status)
	str("concern", concern, &u.Concern)
	str("approach", approach, &u.Approach)
	str("progress", progress, &u.Progress)
	str("primary-mode", mode, &u.PrimaryMode)
	if flagSet(fs, "buffers") {
		b := splitList(*buffers)
		u.Buffers = &b
	}
	if flagSet(fs, "skill-tags") {
		t := splitList(*tags)
		u.SkillTags = &t
	}
	if u == (workspace.ThreadUpdate{}) {
		return usageHint("thread update", "nothing to update: pass --status, --concern, --approach, --progress, --buffers, --skill-tags or --primary-mode")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	taskID, id, err := threadTarget(ctx, w, "thread update", *task, *thread)
	if err != nil {
		return err
	}
	t, err := w.UpdateThread(ctx, taskID, id, agentOr(*agent, "cli"), u)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintf(e.stdout, "updated thread %s\n", t.ID)
	return nil
}

const threadActivateUsage = `Usage:
  workspaced thread activate (--thread X | --task T) [--agent A] [--json]

Makes thread X its agent's active thread: X becomes active (and records when),
and every other active thread addressed to the agent, in any task, becomes
pending. The agent's context without --thread ('workspaced context --agent A')
then assembles X hydrated and the others as summaries.

--agent defaults to the thread's "to"; naming another agent is refused, and
so is a thread that is done (reopen it with 'thread update --status active').
Prints the thread activated and the threads set pending.

Examples:
  workspaced thread activate --thread th_observer
  workspaced thread activate --thread th_observer --agent observer --json

Exit codes: 0 ok, 1 failure (another agent's thread, a done thread), 2 usage,
3 no such thread or task, 4 lock timeout.
`

// activateOutput is thread activate --json.
type activateOutput struct {
	Task    string           `json:"task"`
	Thread  workspace.Thread `json:"thread"`
	Pending []ops.ThreadRef  `json:"pending"`
}

func threadActivate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("thread activate")
	task := fs.String("task", "", "task `ID` of the thread")
	thread := fs.String("thread", "", "thread `ID` (required unless --task names the root thread)")
	agent := fs.String("agent", "", "the agent whose active thread it becomes (`AGENT`; default the thread's \"to\")")
	asJSON := fs.Bool("json", false, "print the thread and the threads set pending as JSON")
	if err := parse(e, fs, threadActivateUsage, args); err != nil {
		return err
	}
	if *thread == "" && *task == "" {
		return usageHint("thread activate", "missing --thread X")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	taskID, id, err := threadTarget(ctx, w, "thread activate", *task, *thread)
	if err != nil {
		return err
	}
	act, err := service.ActivateThread(ctx, w, taskID, id, *agent)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, activateOutput{Task: taskID, Thread: act.Thread, Pending: act.Pending})
	}
	fmt.Fprintf(e.stdout, "activated thread %s (task %s) for %s\n", act.Thread.ID, taskID, act.Thread.To)
	for _, p := range act.Pending {
		fmt.Fprintf(e.stdout, "set pending: thread %s (task %s)\n", p.Thread, p.Task)
	}
	return nil
}
