package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
	"github.com/workspaced/workspaced/workspace/tables"
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
	if isDatabase(*to) {
		return usageHint("export", "--to is a directory; to load a workspace into a database use 'workspaced import'")
	}
	e.opened = true
	if isDatabase(src) {
		db, err := openDatabase(ctx, src, false)
		if err != nil {
			return err
		}
		defer db.Close()
		rep, err := db.Export(ctx, *to)
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
	if !isDatabase(dst) {
		return usageHint("import", "--to names a database: postgres://… or sqlite:PATH (a file workspace is copied with 'workspaced export --from DIR --to DIR')")
	}
	if *from == dst {
		return usageHint("import", "--from and --to name the same workspace")
	}
	e.opened = true
	dir, done, err := importSource(ctx, *from)
	if err != nil {
		return err
	}
	defer done()
	db, err := openDatabase(ctx, dst, true)
	if err != nil {
		return err
	}
	rep, err := db.Import(ctx, dir, tables.ImportOptions{Replace: *replace})
	db.Close()
	if err != nil {
		db.discard()
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d tasks, %d files into %s\n", rep.Tasks, rep.Files, db.name)
	return nil
}

// importSource is the tree an import reads: src itself when a directory
// (which must look like a workspace), else src's export into a temporary
// directory that done removes.
func importSource(ctx context.Context, src string) (dir string, done func(), err error) {
	if !isDatabase(src) {
		if !isWorkspaceDir(src) {
			return "", nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "import " + src,
				Msg: "not a workspace (no workspace.json or tasks/ in it)", Hint: "name a workspace with --from ROOT: a directory or a database"}
		}
		return src, func() {}, nil
	}
	db, err := openDatabase(ctx, src, false)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	tmp, err := os.MkdirTemp("", "workspaced-import-")
	if err != nil {
		return "", nil, fmt.Errorf("import: %w", err)
	}
	done = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "workspace")
	if _, err := db.Export(ctx, dir); err != nil {
		done()
		return "", nil, err
	}
	return dir, done, nil
}

// database is a workspace kept in PostgreSQL or SQLite, as export and
// import move it.
type database struct {
	transferStore
	name    string // for messages: the schema or the file, never a password
	created string // the SQLite file openDatabase created, removed by discard
}

type transferStore interface {
	Export(ctx context.Context, dir string) (tables.Report, error)
	Import(ctx context.Context, dir string, opt tables.ImportOptions) (tables.Report, error)
	Close() error
}

// openDatabase opens the database at root. With create, a SQLite file
// that does not exist yet is created and initialized (a PostgreSQL
// schema is made by init, with its roles).
func openDatabase(ctx context.Context, root string, create bool) (*database, error) {
	if postgres.IsURL(root) {
		s, err := postgres.Open(ctx, root)
		if err != nil {
			return nil, err
		}
		return &database{transferStore: s, name: "schema " + s.Schema()}, nil
	}
	p, err := sqlite.ParsePath(root)
	if err != nil {
		return nil, err
	}
	if _, statErr := os.Stat(p); create && errors.Is(statErr, fs.ErrNotExist) {
		s, _, err := sqlite.Init(ctx, root)
		if err != nil {
			os.Remove(p)
			return nil, err
		}
		return &database{transferStore: s, name: "SQLite database " + p, created: p}, nil
	}
	s, err := sqlite.Open(ctx, root)
	if err != nil {
		return nil, err
	}
	return &database{transferStore: s, name: "SQLite database " + p}, nil
}

// discard removes the SQLite file openDatabase created, after a failed
// import: a failed import leaves nothing behind. Call it after Close.
func (d *database) discard() {
	if d.created != "" {
		os.Remove(d.created)
	}
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
