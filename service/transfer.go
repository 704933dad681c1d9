package service

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

// Exported is what Export wrote.
type Exported struct {
	// Tasks is the number of tasks a database held; a tree is copied
	// file by file and counts none (FromTree).
	Tasks    int
	Files    int
	FromTree bool
}

// Export writes the workspace at src (a directory, a postgres:// URL or
// sqlite:PATH) into dir, which must not exist or be empty, as the file
// tree the file backend holds for the same history, byte for byte. A
// database is read in one snapshot.
func Export(ctx context.Context, src, dir string) (Exported, error) {
	if KindOf(src) != Files {
		db, err := openDatabase(ctx, src, false)
		if err != nil {
			return Exported{}, err
		}
		defer db.Close()
		rep, err := db.Export(ctx, dir)
		if err != nil {
			return Exported{}, err
		}
		return Exported{Tasks: rep.Tasks, Files: rep.Files}, nil
	}
	s, err := openDir(src)
	if err != nil {
		return Exported{}, err
	}
	s.Close()
	n, err := copyTree(src, dir)
	if err != nil {
		return Exported{}, err
	}
	return Exported{Files: n, FromTree: true}, nil
}

// Imported is what Import loaded, and where.
type Imported struct {
	tables.Report
	// Where names the database for messages: its schema or its file,
	// never a password.
	Where string
}

// Import loads the workspace at src (a directory, or a database read in
// one snapshot) into the database dst in one transaction. A SQLite file
// that does not exist yet is created, and removed again when the import
// fails. With replace, a database that holds a workspace already is
// emptied first; without, it is refused.
func Import(ctx context.Context, src, dst string, replace bool) (Imported, error) {
	dir, done, err := importSource(ctx, src)
	if err != nil {
		return Imported{}, err
	}
	defer done()
	db, err := openDatabase(ctx, dst, true)
	if err != nil {
		return Imported{}, err
	}
	rep, err := db.Import(ctx, dir, tables.ImportOptions{Replace: replace})
	db.Close()
	if err != nil {
		db.discard()
		return Imported{}, err
	}
	return Imported{Report: rep, Where: db.name}, nil
}

// importSource is the tree an import reads: src itself when a directory
// (which must look like a workspace), else src's export into a temporary
// directory that done removes.
func importSource(ctx context.Context, src string) (dir string, done func(), err error) {
	if KindOf(src) == Files {
		if !IsWorkspaceDir(src) {
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

// ExportTemp writes the workspace at the database root as its file tree,
// tree, inside a new temporary directory, tmp, which the caller removes;
// op names the operation in errors.
func ExportTemp(ctx context.Context, op, root string) (tmp, tree string, err error) {
	db, err := openDatabase(ctx, root, false)
	if err != nil {
		return "", "", err
	}
	defer db.Close()
	tmp, err = os.MkdirTemp("", "workspaced-"+op+"-")
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", op, err)
	}
	tree = filepath.Join(tmp, "workspace")
	if _, err := db.Export(ctx, tree); err != nil {
		return tmp, "", fmt.Errorf("%s: read the workspace as its tree: %w", op, err)
	}
	return tmp, tree, nil
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
	if KindOf(root) == PostgreSQL {
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
		if p != "." && tables.NotHistory(d.Name()) {
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

// Copy writes a consistent copy of the live SQLite workspace at src to
// the file dst (a path, or sqlite:PATH), replacing it when force. It
// returns the database copied and the copy's file and size.
func Copy(ctx context.Context, src, dst string, force bool) (from, to string, bytes int64, err error) {
	if KindOf(src) != SQLite {
		return "", "", 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "copy " + src, Msg: "copies a sqlite: workspace only",
			Hint: "copy a directory or a PostgreSQL workspace with 'workspaced export --from ROOT --to DIR', or into SQLite with 'workspaced import --from ROOT --to sqlite:FILE'"}
	}
	if KindOf(dst) == SQLite {
		p, err := sqlite.ParsePath(dst)
		if err != nil {
			return "", "", 0, err
		}
		dst = p
	}
	s, err := sqlite.Open(ctx, src)
	if err != nil {
		return "", "", 0, err
	}
	defer s.Close()
	rep, err := s.Copy(ctx, dst, force)
	if err != nil {
		return "", "", 0, err
	}
	return s.Path(), rep.Path, rep.Bytes, nil
}
