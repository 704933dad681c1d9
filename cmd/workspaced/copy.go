package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
)

const copyUsage = `workspaced copy — a consistent copy of a live SQLite workspace.

Usage:
  workspaced copy [--from sqlite:PATH] --to FILE [--force]

Copies the SQLite database of the workspace at --from (else --root or
$WORKSPACE_ROOT, a sqlite: root) into FILE, in one snapshot, while the
daemon and the agents keep writing: the copy holds every transaction
committed before it began and none after (SQLite's VACUUM INTO, which no
writer waits for). It is written beside FILE, checked with PRAGMA
integrity_check and synced to disk before it takes its name, so FILE is
never half written, and it opens as a workspace of its own:
workspaced --root sqlite:FILE task list. FILE must not exist unless
--force, which replaces it (never a file in use: one with a -wal or -shm
file beside it, or served by a daemon). PATH.lock and PATH.locks/ beside
the database are flocks, not data, and are not copied. A directory is
copied with 'workspaced export', any workspace into SQLite with
'workspaced import'.

Examples:
  workspaced --root sqlite:./agents.db copy --to ./agents-copy.db
  workspaced copy --from sqlite:/var/lib/agents.db --to /backup/agents.db --force

Exit codes: 0 ok, 1 failure, 2 usage, 3 no workspace at --from, 4 FILE
exists (use --force) or is in use.
`

func cmdCopy(ctx context.Context, e *env, args []string) error {
	fs := newFlags("copy")
	from := fs.String("from", "", "the workspace `ROOT` to copy, sqlite:PATH (default: --root)")
	to := fs.String("to", "", "the `FILE` to write the copy to (a path, or sqlite:PATH)")
	force := fs.Bool("force", false, "replace FILE when it exists")
	if err := parse(e, fs, copyUsage, args); err != nil {
		return err
	}
	if *to == "" {
		return usageHint("copy", "--to FILE is required")
	}
	src := e.root
	if *from != "" {
		src = *from
	}
	e.opened = true
	copied, dst, n, err := service.Copy(ctx, src, *to, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied %s to %s (%d bytes, integrity ok)\n", copied, dst, n)
	return nil
}
