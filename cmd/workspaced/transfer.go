package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/service"
)

const exportUsage = `workspaced export — write a workspace as the canonical file tree.

Usage:
  workspaced export [--from ROOT] --to DIR

Writes the workspace at ROOT (--from, else --root, $WORKSPACE_ROOT or
./workspace: a directory, a postgres:// URL or sqlite:PATH) into DIR,
which must not exist or be empty, as the file tree the file backend holds
for the same history, byte for byte: workspace.json, config/, friction/,
memory/, skills/, and every task's task.json, state.json, journal/,
backups/, events.log, threads/, env/, sessions/, plans, outputs and
reviews. Locks and temporary files are left out, as .gitignore leaves
them out of git. A database is read in one snapshot, so a workspace in
use exports as it was at one moment; 'git diff' between two exports
shows what changed.

Examples:
  workspaced export --from 'postgres://agent@db/agents?schema=team_a' --to ./snapshot
  workspaced export --from sqlite:./agents.db --to ./snapshot
  workspaced --root ./ws export --to /tmp/ws-copy

Exit codes: 0 ok, 1 failure (a database newer than this workspaced),
2 usage, 3 no workspace at ROOT, 4 DIR is not empty.
`

const importUsage = `workspaced import — load a workspace into a database.

Usage:
  workspaced import --from ROOT [--to DATABASE] [--replace]

Loads the workspace at ROOT (a directory, or a database: sqlite:PATH or
postgres://…, read in one snapshot) into DATABASE (--to, else --root or
$WORKSPACE_ROOT): a PostgreSQL schema 'workspaced init' created, or a
SQLite file, created when missing. It loads in one transaction: tasks,
plans and their versions, outputs with their history, reviews, threads,
entries of every scope, markers still waiting, and the daemon's state,
journal, backups and events, with the friction log, the skills and the
settings. 'workspaced export' then writes the tree back byte for byte. A
database that holds a workspace already is refused unless --replace,
which empties it first. Stop the daemon serving a directory before
importing it; a tree whose daemon was killed mid-commit is refused until
'workspaced serve' has settled its journal once.

Examples:
  workspaced --root 'postgres://admin@db/agents?schema=team_a' init
  workspaced import --from ./ws --to 'postgres://admin@db/agents?schema=team_a'
  workspaced import --from ./ws --to sqlite:./agents.db
  workspaced import --from sqlite:./agents.db --to 'postgres://admin@db/agents?schema=team_a'

Exit codes: 0 ok, 1 failure (a file that cannot be kept byte for byte, a
database newer than this workspaced), 2 usage, 3 no workspace at ROOT or
no schema at --to, 4 the database holds a workspace (use --replace).
`

func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := newFlags("export")
	from := fs.String("from", "", "the workspace `ROOT` to export: a directory, a postgres:// URL or sqlite:PATH (default: --root)")
	to := fs.String("to", "", "the directory `DIR` to write, new or empty")
	if err := parse(e, fs, exportUsage, args); err != nil {
		return err
	}
	if *to == "" {
		return usageHint("export", "--to DIR is required")
	}
	src := e.root
	if *from != "" {
		src = *from
	}
	if service.KindOf(*to) != service.Files {
		return usageHint("export", "--to is a directory; to load a workspace into a database use 'workspaced import'")
	}
	e.opened = true
	if service.HasPaths(src) {
		e.root = src
	}
	rep, err := service.Export(ctx, src, *to)
	if err != nil {
		return err
	}
	if rep.FromTree {
		fmt.Fprintf(e.stdout, "exported %d files to %s\n", rep.Files, *to)
		return nil
	}
	fmt.Fprintf(e.stdout, "exported %d tasks, %d files to %s\n", rep.Tasks, rep.Files, *to)
	return nil
}

func cmdImport(ctx context.Context, e *env, args []string) error {
	fs := newFlags("import")
	from := fs.String("from", "", "the workspace `ROOT` to load: a directory, sqlite:PATH or a postgres:// URL")
	to := fs.String("to", "", "the `DATABASE` to load it into: postgres://… or sqlite:PATH (default: --root)")
	replace := fs.Bool("replace", false, "empty a database that holds a workspace already, then load")
	if err := parse(e, fs, importUsage, args); err != nil {
		return err
	}
	if *from == "" {
		return usageHint("import", "--from ROOT is required (a directory, or a database)")
	}
	dst := e.root
	if *to != "" {
		dst = *to
	}
	if service.KindOf(dst) == service.Files {
		return usageHint("import", "--to names a database: postgres://… or sqlite:PATH (a file workspace is copied with 'workspaced export --from DIR --to DIR')")
	}
	if *from == dst {
		return usageHint("import", "--from and --to name the same workspace")
	}
	e.opened = true
	rep, err := service.Import(ctx, *from, dst, *replace)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d tasks, %d files into %s\n", rep.Tasks, rep.Files, rep.Where)
	return nil
}
