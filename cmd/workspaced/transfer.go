package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/postgres"
)

const exportUsage = `workspaced export — write a workspace as the canonical file tree.

Usage:
  workspaced export [--from ROOT] --to DIR

Writes the workspace at ROOT (--from, else --root, $WORKSPACE_ROOT or
./workspace: a directory or a postgres:// URL) into DIR, which must not
exist or be empty, as the file tree the file backend holds for the same
history, byte for byte: workspace.json, config/, friction/, memory/,
skills/, and every task's task.json, state.json, journal/, backups/,
events.log, threads/, env/, sessions/, plans, outputs and reviews. Locks
and temporary files are left out, as .gitignore leaves them out of git.
On PostgreSQL it reads one snapshot, so a workspace in use exports as it
was at one moment; 'git diff' between two exports shows what changed.

Examples:
  workspaced export --from 'postgres://agent@db/agents?schema=team_a' --to ./snapshot
  workspaced --root ./ws export --to /tmp/ws-copy

Exit codes: 0 ok, 1 failure, 2 usage, 3 no workspace at ROOT, 4 DIR is not empty.
`

const importUsage = `workspaced import — load a file workspace into PostgreSQL.

Usage:
  workspaced import --from DIR [--to postgres://…] [--replace]

Loads the file workspace at DIR into the schema at --to (else --root or
$WORKSPACE_ROOT), which 'workspaced init' must have created, in one
transaction: tasks, plans and their versions, outputs with their history,
reviews, threads, entries of every scope, markers still waiting, and the
daemon's state, journal, backups and events, with the friction log and the
settings. 'workspaced export' then writes DIR back byte for byte. A schema
that holds a workspace already is refused unless --replace, which empties
it first. Stop the daemon serving DIR before importing it; a tree whose
daemon was killed mid-commit is refused until 'workspaced serve' has
settled its journal once.

Examples:
  workspaced --root 'postgres://admin@db/agents?schema=team_a' init
  workspaced import --from ./ws --to 'postgres://admin@db/agents?schema=team_a'

Exit codes: 0 ok, 1 failure (a file that cannot be kept byte for byte),
2 usage, 3 no workspace at DIR or no schema at --to, 4 the schema holds a
workspace (use --replace).
`

func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := newFlags("export")
	from := fs.String("from", "", "the workspace `ROOT` to export: a directory or a postgres:// URL (default: --root)")
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
	if postgres.IsURL(*to) {
		return usageHint("export", "--to is a directory; to move a file workspace into PostgreSQL use 'workspaced import'")
	}
	e.opened = true
	if postgres.IsURL(src) {
		s, err := postgres.Open(ctx, src)
		if err != nil {
			return err
		}
		defer s.Close()
		rep, err := s.Export(ctx, *to)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "exported %d tasks, %d files to %s\n", rep.Tasks, rep.Files, *to)
		return nil
	}
	e.root = src
	w, err := e.open()
	if err != nil {
		return err
	}
	w.Close()
	n, err := copyTree(src, *to)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "exported %d files to %s\n", n, *to)
	return nil
}

func cmdImport(ctx context.Context, e *env, args []string) error {
	fs := newFlags("import")
	from := fs.String("from", "", "the file workspace `DIR` to load")
	to := fs.String("to", "", "the workspace `URL` to load it into: postgres://… (default: --root)")
	replace := fs.Bool("replace", false, "empty a schema that holds a workspace already, then load")
	if err := parse(e, fs, importUsage, args); err != nil {
		return err
	}
	if *from == "" {
		return usageHint("import", "--from DIR is required")
	}
	dst := e.root
	if *to != "" {
		dst = *to
	}
	if !postgres.IsURL(dst) {
		return usageHint("import", "--to names a postgres:// URL (a file workspace is copied with 'workspaced export --from DIR --to DIR')")
	}
	if postgres.IsURL(*from) {
		return usageHint("import", "--from is a directory; to write a PostgreSQL workspace as files use 'workspaced export'")
	}
	e.opened = true
	s, err := postgres.Open(ctx, dst)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := s.Import(ctx, *from, postgres.ImportOptions{Replace: *replace})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d tasks, %d files into schema %s\n", rep.Tasks, rep.Files, s.Schema())
	return nil
}

// copyTree copies the history of the file workspace at src (no locks, no
// temporary files) into dst, which must not exist or be empty.
func copyTree(src, dst string) (int, error) {
	if ents, err := os.ReadDir(dst); err == nil && len(ents) > 0 {
		return 0, &workspace.Error{Kind: workspace.ErrConflict, Op: "export to " + dst, Msg: "the directory is not empty",
			Hint: "export into a new or empty directory"}
	}
	in, err := os.OpenRoot(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	n := 0
	err = fs.WalkDir(in.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && postgres.NotHistory(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return out.MkdirAll(filepath.FromSlash(p), 0o755)
		case d.Type().IsRegular():
			b, err := in.ReadFile(filepath.FromSlash(p))
			if err != nil {
				return err
			}
			n++
			return out.WriteFile(filepath.FromSlash(p), b, 0o644)
		}
		return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "export " + p, Msg: "neither a file nor a directory (a symlink?)",
			Hint: "replace it with the file it stands for, or remove it"}
	})
	if err != nil {
		return n, fmt.Errorf("export %s to %s: %w", src, dst, err)
	}
	return n, nil
}
