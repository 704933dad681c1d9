package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const statusUsage = `workspaced status — is a daemon serving this root; tasks and waiting markers.

Usage:
  workspaced status [--json]

Probes the root's daemon lock (<root>/.workspaced.lock) without taking it,
names the pid serving, counts tasks by status ("none": no state.json yet)
and lists the markers still waiting in task directories (a daemon serving
takes them within moments; markers waiting with no daemon are taken when
one starts). A daemon serving also says when it last rescanned, and what
keeps it from serving everything at once: tasks stopped by an error (a full
disk, a read-only filesystem) that it retries, task directories it cannot
watch (the inotify limit; off Linux the open-files limit), entries of tasks/ it refuses. Entries of tasks/
that are not task directories (a symlink, a file, a name that is not a task
id) are listed as skipped: no command and no daemon looks into them. It
only reads.

A task's state is named "invalid" when its state.json does not parse or
its task_id, status or journal_seq is missing or wrong; the rest of it is
not checked here, so that status answers at once over tens of thousands of
tasks. 'workspaced validate' checks every state whole against its schema.

On a postgres:// root the lease names the daemon serving (its holder,
epoch and when the lease expires; "no daemon serving" when it has expired
or was released), and the tables give the tasks and the markers waiting;
there is no lock file or socket, so the live report and skipped entries
are left out (--json: holder, epoch, expires_at instead of pid, since,
live).

On a sqlite:PATH root the daemon's lock is the flock of PATH.lock: status
names the pid holding it, and the daemon answers with its own report as
on a directory (the tasks it retries after a commit the database refused:
a full disk, a read-only file); the tables give the tasks and the markers
waiting (--json: holder, pid, since, live; no skipped entries). On a
read-only filesystem it still reads them, and says so in a "degraded:
read_only" line (--json: fault, {kind, error, hint}).

Examples:
  workspaced status
  workspaced status --json | jq .serving
  workspaced status --json | jq .live.stopped

Exit codes: 0 ok (whether or not a daemon serves), 1 failure, 2 usage,
3 no workspace here.
`

func cmdStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags("status")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := parse(e, fs, statusUsage, args); err != nil {
		return err
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	if sr, ok := workspace.As[workspace.StatusReader](st); ok {
		return statusDB(ctx, e, sr, *asJSON)
	}
	w, err := fileTree("status", st)
	if err != nil {
		return err
	}
	s, err := service.ReadTreeStatus(ctx, w)
	if err != nil {
		return err
	}
	live := readLive(w.Dir(), s.Serving)
	if *asJSON {
		return printStatusJSON(e.stdout, s, live)
	}
	switch {
	case s.Serving && s.PID > 0:
		since := ""
		if s.Since != nil {
			since = ", since " + shortTime(*s.Since)
		}
		fmt.Fprintf(e.stdout, "daemon: serving %s (pid %d%s)\n", s.Root, s.PID, since)
	case s.Serving:
		fmt.Fprintf(e.stdout, "daemon: serving %s\n", s.Root)
	default:
		fmt.Fprintf(e.stdout, "daemon: not serving %s (start one with 'workspaced serve')\n", s.Root)
	}
	printCounts(e.stdout, len(s.Tasks), s.ByStatus, s.MarkersWaiting)
	for _, sk := range s.Skipped {
		fmt.Fprintf(e.stdout, "skipped %s: %s\n", displayName(sk.File), sk.Reason)
	}
	printLive(e.stdout, live)
	rows := make([][]string, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		rows = append(rows, []string{t.ID, t.Status, t.Phase, strconv.FormatInt(t.JournalSeq, 10), strconv.Itoa(t.MarkersWaiting), cut(t.Error, 60)})
	}
	return printTaskRows(e.stdout, rows)
}

// printCounts prints the tasks by status and the markers waiting.
func printCounts(w io.Writer, tasks int, byStatus map[string]int, waiting int) {
	var counts []string
	for st, n := range byStatus {
		counts = append(counts, st+" "+strconv.Itoa(n))
	}
	sort.Strings(counts)
	fmt.Fprintf(w, "tasks: %d", tasks)
	if len(counts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(counts, ", "))
	}
	fmt.Fprintf(w, "\nmarkers waiting: %d\n", waiting)
}

// printTaskRows prints status's table of tasks, after a blank line; none
// prints nothing.
func printTaskRows(w io.Writer, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	out := bufio.NewWriter(w)
	table(out, []string{"TASK", "STATUS", "PHASE", "SEQ", "WAITING", "ERROR"}, rows)
	return out.Flush()
}

// statusDB is status on a workspace kept in a database, which reports
// its status itself (workspace.StatusReader): on PostgreSQL the lease
// says which daemon serves (there is no lock file or socket to probe); on
// SQLite the flock of PATH.lock does, and the daemon answers with its own
// report as it does for a directory.
func statusDB(ctx context.Context, e *env, sr workspace.StatusReader, asJSON bool) error {
	s, err := sr.ReadStatus(ctx)
	if err != nil {
		return err
	}
	s.Root = e.rootName()
	if asJSON {
		return printJSON(e.stdout, s)
	}
	fmt.Fprintln(e.stdout, daemonLine(s))
	if f := s.Fault; f != nil {
		fmt.Fprintf(e.stdout, "degraded: %s: %s; reads go on, every write fails until it is mended\n", f.Kind, f.Error)
		if f.Hint != "" {
			fmt.Fprintf(e.stdout, "hint: %s\n", f.Hint)
		}
	}
	printCounts(e.stdout, len(s.Tasks), s.ByStatus, s.MarkersWaiting)
	printLive(e.stdout, s.Live)
	rows := make([][]string, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		rows = append(rows, []string{t.ID, t.Status, t.Phase, strconv.FormatInt(t.JournalSeq, 10), strconv.Itoa(t.MarkersWaiting), cut(t.Error, 60)})
	}
	return printTaskRows(e.stdout, rows)
}

// daemonLine is status's first line on a database: the lease on
// PostgreSQL, the lock's holder on SQLite.
func daemonLine(s workspace.StoreStatus) string {
	switch {
	case s.Serving && s.ExpiresAt != nil:
		return fmt.Sprintf("daemon: serving %s (%s, lease epoch %d, expires %s)", s.Root, s.Holder, s.Epoch, shortTime(*s.ExpiresAt))
	case s.Serving && s.PID > 0 && s.Since != nil:
		return fmt.Sprintf("daemon: serving %s (pid %d, since %s)", s.Root, s.PID, shortTime(*s.Since))
	case s.Serving && s.PID > 0:
		return fmt.Sprintf("daemon: serving %s (pid %d)", s.Root, s.PID)
	case s.Serving && s.Holder != "":
		return fmt.Sprintf("daemon: serving %s (%s, lease epoch %d)", s.Root, s.Holder, s.Epoch)
	case s.Serving:
		return fmt.Sprintf("daemon: serving %s", s.Root)
	case s.Holder != "":
		return fmt.Sprintf("daemon: no daemon serving %s (the lease of %s, epoch %d, expired; start one with 'workspaced serve')", s.Root, s.Holder, s.Epoch)
	}
	return fmt.Sprintf("daemon: no daemon serving %s (start one with 'workspaced serve')", s.Root)
}

// printStatusJSON writes s, with the daemon's live report when there is
// one, as printJSON would, streaming its task rows rather than encoding
// the whole report in memory at once.
func printStatusJSON(w io.Writer, s service.TreeStatus, live *workspace.Live) error {
	tasks := s.Tasks
	s.Tasks = []service.TaskStatus{}
	head, err := atomicfile.Marshal(statusReport{TreeStatus: s, Live: live})
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	// JSON strings hold no raw newline: this is the top-level field.
	const field = "\n  \"tasks\": []"
	i := bytes.Index(head, []byte(field))
	if i < 0 {
		return errors.New("encode output: no tasks field")
	}
	out := bufio.NewWriter(w)
	out.Write(head[:i+len(field)-len("[]")])
	a := newJSONArray(out, "  ")
	for _, t := range tasks {
		if err := a.add(t); err != nil {
			return err
		}
	}
	if err := a.end(); err != nil {
		return err
	}
	out.Write(head[i+len(field):])
	return out.Flush()
}
