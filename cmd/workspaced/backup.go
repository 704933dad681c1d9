package main

import (
	"context"
	"fmt"
	"path"
	"strconv"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const backupUsage = `workspaced backup — list or restore the backups of a task's state.json.

Usage:
  workspaced backup list (--task T | --thread X) [--json]
  workspaced backup restore (--task T | --thread X) [--file NAME] [--force]

Before every state write the daemon keeps the previous state.json in
tasks/<id>/backups/state_<stamp>.json (the newest backups.keep, default 10).

Examples:
  workspaced backup list --task t1
  workspaced backup restore --task t1

Exit codes: 0 ok, 1 failure, 2 usage, 3 no such task or backup,
4 a daemon is serving (restore without --force) or the task lock is held.
`

func cmdBackup(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "backup", backupUsage, []subcommand{
		{"list", "the backups of a task's state.json, newest first", backupList},
		{"restore", "put a backup back as state.json", backupRestore},
	}, args)
}

const backupListUsage = `Usage:
  workspaced backup list (--task T | --thread X) [--json]

Lists the backups of the task's state.json, newest first, with their size,
the journal_seq they reflect and whether they are valid. When there are
none it says why: the daemon has not written state.json yet, has written
it only once (a backup keeps the state a write replaces), or retention has
summarised the finished task (--json then prints []).

Examples:
  workspaced backup list --task t1
  workspaced backup list --task t1 --json | jq -r '.[0].name'

Exit codes: 0 ok, 1 failure, 2 usage, 3 no such task.
`

func backupList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("backup list")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "a thread `ID` of the task")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parse(e, fs, backupListUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "backup list", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	infos, err := service.Backups(ctx, w, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, infos)
	}
	if len(infos) == 0 {
		fmt.Fprintf(e.stdout, "no backups of task %s: %s\n", id, service.WhyNoBackups(ctx, w, id))
		return nil
	}
	rows := make([][]string, 0, len(infos))
	for _, b := range infos {
		valid := "valid"
		if !b.Valid {
			valid = "INVALID: " + cut(b.Problem, 50)
		}
		rows = append(rows, []string{b.Name, strconv.FormatInt(b.Size, 10), strconv.FormatInt(b.JournalSeq, 10), b.Status, valid})
	}
	table(e.stdout, []string{"NAME", "BYTES", "SEQ", "STATUS", "CHECK"}, rows)
	return nil
}

const backupRestoreUsage = `Usage:
  workspaced backup restore (--task T | --thread X) [--file NAME] [--force]

Replaces the task's state.json, atomically, with a backup: NAME (from
'backup list'), or by default the newest backup that is valid. The current
state.json is kept as a backup first. It takes the task's lock, so it never
races the daemon's own writes.

The journal stays the record: the next time the daemon loads the task (on
its start, or at the task's next marker) it replays every journal record
past the restored state's journal_seq, so a restore repairs state.json but
never drops a marker that was taken. The daemon restores a corrupt
state.json by itself on start; this command is for doing it by hand. It
refuses while a daemon serves the root (exit 4) unless --force: on a
directory the daemon holds .workspaced.lock, on a sqlite:PATH root the
flock of PATH.lock.

Examples:
  workspaced backup restore --task t1
  workspaced backup restore --task t1 --file state_20240115T100000.123456789Z.json

Exit codes: 0 ok, 1 failure (the backup is not valid), 2 usage, 3 no such
task or backup (or no valid one), 4 a daemon serves (use --force) or the
task lock is held past the lock timeout.
`

func backupRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags("backup restore")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "a thread `ID` of the task")
	name := fs.String("file", "", "the backup `NAME` to restore (default: the newest valid one)")
	force := fs.Bool("force", false, "restore even while a daemon serves this root")
	if err := parse(e, fs, backupRestoreUsage, args); err != nil {
		return err
	}
	w, id, err := e.openTask(ctx, "backup restore", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	chosen, err := service.RestoreBackup(ctx, w, id, *name, *force)
	if err != nil {
		return err
	}
	target := path.Join(workspace.TaskDir(id), "state.json")
	fmt.Fprintf(e.stdout, "restored %s from %s\n", e.display(target), chosen)
	return nil
}
