package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

const eventsUsage = `workspaced events — read or follow task events (tasks/<task>/events.log).

Usage:
  workspaced events [--task T | --thread X] [--follow] [--json] [--since RFC3339]

Without --task, the events of every task, merged by time (each task's
events.log is read as a stream, so memory stays flat however many events
there are). --follow prints
the events so far and then new ones as they are appended (new tasks are
picked up), until interrupted. Text output is the events.log line itself;
--json prints one JSON object per line:
{"time":...,"event":...,"task_id":...,"args":[...],"attrs":{...}}.

Examples:
  workspaced events --task t1
  workspaced events --follow --json | jq -c 'select(.event=="work_completed")'
  workspaced events --since 2024-01-15T10:00:00Z

Exit codes: 0 ok (also when --follow is interrupted), 1 failure, 2 usage, 3 task not found.
`

// followInterval is how often --follow looks for new lines.
const followInterval = 100 * time.Millisecond

func cmdEvents(ctx context.Context, e *env, args []string) error {
	fs := newFlags("events")
	task := fs.String("task", "", "only this task `ID`")
	thread := fs.String("thread", "", "only the task of this thread `ID`")
	follow := fs.Bool("follow", false, "keep printing new events until interrupted")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	sinceFlag := fs.String("since", "", "only events at or after this RFC 3339 `TIME`")
	if err := parse(e, fs, eventsUsage, args); err != nil {
		return err
	}
	var since time.Time
	if *sinceFlag != "" {
		t, err := time.Parse(time.RFC3339Nano, *sinceFlag)
		if err != nil {
			return usageHint("events", "--since %q is not an RFC 3339 time (e.g. 2024-01-15T10:00:00Z)", *sinceFlag)
		}
		since = t
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	id := ""
	if *task != "" || *thread != "" {
		if id, err = resolveTask(ctx, w, "events", *task, *thread); err != nil {
			return err
		}
		if _, err := w.GetTask(ctx, id); err != nil {
			return err
		}
	}
	var werr error
	print := func(ev workspace.Event) {
		if werr != nil || (!since.IsZero() && ev.Time.Before(since)) {
			return
		}
		werr = writeEvent(e.stdout, ev, *asJSON)
	}
	if *follow {
		ferr := w.FollowEvents(ctx, id, true, followInterval, func(ev workspace.Event) {
			print(ev)
		})
		if ferr != nil {
			return ferr
		}
		return werr
	}
	var ids []string // every task
	if id != "" {
		ids = []string{id}
	}
	// The logs are read as streams and merged; a buffered stdout keeps
	// that from costing a write per event.
	out := bufio.NewWriter(e.stdout)
	bad, err := w.MergeEvents(ctx, ids, func(ev workspace.Event) error {
		if since.IsZero() || !ev.Time.Before(since) {
			return writeEvent(out, ev, *asJSON)
		}
		return nil
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	for _, b := range bad {
		if b.Unread != nil {
			fmt.Fprintf(e.stderr, "workspaced: warning: tasks/%s/%s: not read: %v\n", b.TaskID, workspace.EventsFile, b.Unread)
			continue
		}
		fmt.Fprintf(e.stderr, "workspaced: warning: tasks/%s/%s: skipped %d lines that do not parse (first: %v)\n", b.TaskID, workspace.EventsFile, b.Count, b.First)
	}
	return err
}

func writeEvent(w io.Writer, ev workspace.Event, asJSON bool) error {
	if asJSON {
		// One compact object per line, as JSON Lines readers expect.
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		return nil
	}
	_, err := fmt.Fprintln(w, workspace.FormatEvent(ev))
	return err
}
