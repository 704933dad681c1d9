// Package service is the operations layer: what every door (the command
// line, the MCP server, the panel and its HTTP API, the demo) offers, once.
// It is the only code that knows the kinds of root — a directory, a
// sqlite:PATH, a postgres:// URL — and opens a store from one (Open); a
// door gets a workspace.Store and asks this package, never the store's
// concrete type, what a kind of store can do: name itself (Where), keep
// tokens (Tokens), be served (Serve), hand out its file tree (Tree).
//
// The operations themselves take a context and a workspace.Store: Deliver
// (a product's done marker and the daemon's verdict on it), Export and
// Import, Rebuild and the state checks, and the rest the doors share. The
// doors keep flags, transport and printing.
package service

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Kind is how a root keeps its workspace.
type Kind int

// The kinds of root.
const (
	// Files is a directory: the canonical file tree.
	Files Kind = iota
	// SQLite is sqlite:PATH: the workspace in one database file.
	SQLite
	// PostgreSQL is a postgres:// or postgresql:// URL.
	PostgreSQL
)

// KindOf is the kind of store root names.
func KindOf(root string) Kind {
	switch {
	case postgres.IsURL(root):
		return PostgreSQL
	case sqlite.IsURL(root):
		return SQLite
	}
	return Files
}

// HasPaths reports whether the things of the workspace at root have
// paths a person can open: true of a directory, false of a database,
// whose names (tasks/t1/.claim.w1.…) are the protocol's.
func HasPaths(root string) bool { return KindOf(root) == Files }

// Options are how Open opens a store.
type Options struct {
	// Grace is the grace period of markers that do not parse, for a
	// daemon over a file tree (zero: the settings').
	Grace time.Duration
	// Logger is where a daemon over a file tree logs (nil: slog's
	// default).
	Logger *slog.Logger
}

// Open opens the workspace at root: a directory that is a workspace (a
// mistyped one is refused with a hint, so no tree is written into it),
// sqlite:PATH, or a postgres:// URL. The caller closes it.
func Open(ctx context.Context, root string, opts Options) (workspace.Store, error) {
	switch KindOf(root) {
	case PostgreSQL:
		return postgres.Open(ctx, root)
	case SQLite:
		return sqlite.Open(ctx, root)
	}
	s, err := openDir(root)
	if err != nil {
		return nil, err
	}
	if opts.Grace != 0 || opts.Logger != nil {
		s.SetServeOptions(files.ServeOptions{Grace: opts.Grace, Logger: opts.Logger})
	}
	return s, nil
}

// OpenTree opens the workspace at root as a file tree, for what only a
// tree has (paths, os.Root, flock held for a child process, the daemon's
// journal files). A database root is refused as FilesOnly(name) says.
func OpenTree(root, name string) (*FileTree, error) {
	if KindOf(root) != Files {
		return nil, FilesOnly(name)
	}
	s, err := openDir(root)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openDir opens the directory root, refusing one that is not a
// workspace (neither workspace.json nor tasks/ in it).
func openDir(root string) (*FileTree, error) {
	w, err := files.Open(root, workspace.Options{})
	var we *workspace.Error
	if errors.As(err, &we) && errors.Is(err, workspace.ErrNotFound) {
		withCommands := *we
		withCommands.Hint = "create one with 'workspaced init', or point at one with --root DIR or WORKSPACE_ROOT"
		return nil, &withCommands
	}
	if err != nil {
		return nil, err
	}
	if !IsWorkspaceDir(w.Dir()) {
		w.Close()
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "open workspace " + root,
			Msg:  "not a workspace (no workspace.json or tasks/ in it)",
			Hint: "create one with 'workspaced --root " + Name(root) + " init', or point at one with --root DIR or WORKSPACE_ROOT"}
	}
	return w, nil
}

// FilesOnly is the refusal of an operation (name; "" says "this
// command") that works on a file tree only, asked of a database root.
func FilesOnly(name string) error {
	if name == "" {
		name = "this command"
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: name,
		Msg:  "works on a workspace kept as files only, and this root is a database",
		Hint: "run it on a directory, or on a copy: 'workspaced export --from ROOT --to DIR' writes the workspace as files"}
}

// IsWorkspaceDir reports whether dir looks like a workspace root.
func IsWorkspaceDir(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "workspace.json")); err == nil && st.Mode().IsRegular() {
		return true
	}
	st, err := os.Stat(filepath.Join(dir, "tasks"))
	return err == nil && st.IsDir()
}

// Name is root as printed: a database URL with its password masked
// (url.URL.Redacted), a directory or sqlite:PATH as given.
func Name(root string) string {
	if KindOf(root) == PostgreSQL {
		if u, err := url.Parse(root); err == nil {
			return u.Redacted()
		}
		return "the database"
	}
	return root
}

// Tree is the file tree under st, for the operations (op) that need what
// only a tree has; a workspace kept otherwise is refused with a clear
// error.
func Tree(op string, st workspace.Store) (*FileTree, error) {
	if fs, ok := st.(*FileTree); ok {
		return fs, nil
	}
	return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "works on a workspace kept as files only",
		Hint: "run it with --root pointing at a workspace directory; 'workspaced export --from ROOT --to DIR' writes a PostgreSQL workspace as one"}
}

// Tokens is where st keeps its agents' tokens: config/tokens.json of a
// directory, the tokens table of a database.
func Tokens(op string, st workspace.Store) (tokens.Keeper, error) {
	if k, ok := workspace.As[tokens.Holder](st); ok {
		return k.Tokens(), nil
	}
	w, err := Tree(op, st)
	if err != nil {
		return nil, err
	}
	return tokens.Tree(w), nil
}

// Where names the workspace st for a message: its directory, its schema
// on PostgreSQL (the URL may carry a password), its file on SQLite; ""
// for a store of another kind.
func Where(st workspace.Store) string {
	switch s := st.(type) {
	case *FileTree:
		return "root " + s.Dir()
	case *postgres.Store:
		return "PostgreSQL schema " + s.Schema()
	case *sqlite.Store:
		return "SQLite database " + s.Path()
	}
	return ""
}

// Verdicts is where the verdicts of st's markers are read: the store
// itself, which reads them from its journal and state (every store here
// does); op names the operation in the refusal of one that does not.
func Verdicts(op string, st workspace.Store) (workspace.VerdictSource, error) {
	if src, ok := workspace.As[workspace.VerdictSource](st); ok {
		return src, nil
	}
	_, err := Tree(op, st)
	if err == nil {
		err = &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "this workspace gives no verdicts on its markers"}
	}
	return nil, err
}

// DaemonLock is the file whose flock the daemon serving st holds: the
// tree's .workspaced.lock, a SQLite database's PATH.lock; "" for a store
// that leads otherwise (PostgreSQL's lease).
func DaemonLock(st workspace.Store) string {
	if s, ok := st.(*FileTree); ok {
		return files.LockPath(s.Dir())
	}
	if l, ok := workspace.As[workspace.DaemonLocker](st); ok {
		return l.DaemonLock()
	}
	return ""
}

// DatabaseFile is the file of a sqlite:PATH root.
func DatabaseFile(root string) (string, error) { return sqlite.ParsePath(root) }

// FileTree is a workspace kept as files, for what only a tree has (paths,
// os.Root, flock held for a child process, the daemon's journal files):
// what Tree and OpenTree return.
type FileTree = files.Store
