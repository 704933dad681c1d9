// Package workspace is the tree: its layout, the one writer every file goes
// through, entries in every scope, tasks, plans, outputs, reviews, threads,
// markers, events and agent cards.
//
// A *Workspace is safe for concurrent use by many goroutines, and any number
// of processes (in any language) may use the same tree at once: every
// read-modify-write happens under a flock on a sidecar lock file, every
// write is atomic and durable, and every path is opened through an os.Root
// so nothing is read or written outside the root.
package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
)

// Workspace is an open workspace root.
type Workspace struct {
	root     *os.Root
	dir      string // absolute path of the root
	settings Settings
	now      func() time.Time
}

// Options tune Open.
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// DefaultSettings opens the workspace with the default settings,
	// without reading workspace.json: for a checker (validate) that must
	// look at a tree whose workspace.json is itself broken.
	DefaultSettings bool
}

// ResolveRoot picks the root directory: flag, then $WORKSPACE_ROOT, then
// DefaultRoot in the working directory.
func ResolveRoot(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("WORKSPACE_ROOT"); env != "" {
		return env
	}
	return DefaultRoot
}

// Open opens an existing workspace at dir and loads workspace.json.
func Open(dir string, opt Options) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return nil, &Error{Kind: ErrNotFound, Op: "open workspace " + dir, Msg: "no workspace here",
			Hint: "create a workspace there, or open the directory that holds one"}
	}
	if !isWorkspaceDir(abs) {
		return nil, &Error{Kind: ErrNotFound, Op: "open workspace " + dir, Msg: "the directory holds neither workspace.json nor tasks/",
			Hint: "create a workspace there, or open the directory that holds one"}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	w := &Workspace{root: root, dir: abs, now: opt.Now}
	if w.now == nil {
		w.now = time.Now
	}
	if opt.DefaultSettings {
		w.settings = Settings{}.WithDefaults()
	} else if err := w.loadSettings(); err != nil {
		root.Close()
		return nil, err
	}
	return w, nil
}

// Init creates a workspace at dir (the directory may exist) with its
// skeleton: workspace.json with every default written out,
// config/agents.json, friction/friction.json, memory/, tasks/ and a
// .gitignore (GitIgnore). Existing files are left alone, so Init is safe
// to run twice.
func Init(dir string, opt Options) (*Workspace, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("init workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("init workspace %s: %w", dir, err)
	}
	defer root.Close()
	for _, d := range []string{"tasks", "config", "friction", "memory/global", "memory/agents"} {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("init workspace %s: create %s: %w", dir, d, err)
		}
	}
	files := []struct {
		name string
		v    any
	}{
		{"workspace.json", Settings{}.WithDefaults()},
		{"config/agents.json", AgentCards{Agents: []AgentCard{}}},
		{"friction/friction.json", map[string]any{"entries": []any{}}},
	}
	for _, f := range files {
		if _, err := root.Lstat(f.name); err == nil {
			continue
		}
		if err := atomicfile.WriteJSON(root, f.name, f.v, 0o644); err != nil {
			return nil, fmt.Errorf("init workspace %s: %w", dir, err)
		}
	}
	if _, err := root.Lstat(".gitignore"); err != nil {
		if err := atomicfile.WriteFile(root, ".gitignore", []byte(GitIgnore), 0o644); err != nil {
			return nil, fmt.Errorf("init workspace %s: %w", dir, err)
		}
	}
	return Open(dir, opt)
}

// GitIgnore is the .gitignore Init writes at the root, so that
// 'git init && git add -A' there records the tree and nothing else: not
// the lock files (they hold only who has the lock), not the temporary
// files of writes in progress (renameio's ".<name><digits>", the agents'
// ".<name>.tmp-<random>", the journal's ".tmp-<name>"), not the daemon's
// lock. Markers are kept: a marker waiting is part of the run.
const GitIgnore = `# Written by 'workspaced init': locks and temporary files are not history.
.locks/
.workspaced.lock
.*.json[0-9]*
..*
.*.tmp-*
.tmp-*
`

// isWorkspaceDir tells a workspace from any other directory: it holds
// workspace.json or tasks/ (agents in other languages may start a tree
// without workspace.json; every setting is optional).
func isWorkspaceDir(abs string) bool {
	for _, n := range []string{"workspace.json", "tasks"} {
		if _, err := os.Lstat(filepath.Join(abs, n)); err == nil {
			return true
		}
	}
	return false
}

func (w *Workspace) loadSettings() error {
	data, err := ReadAgentFile(w.root, "workspace.json", 1<<20)
	if errors.Is(err, ErrNotFound) {
		w.settings = Settings{}.WithDefaults()
		return nil
	}
	if err != nil {
		return err
	}
	if err := schemas.Validate(schemas.KindWorkspace, data); err != nil {
		return &Error{Kind: ErrInvalid, Op: "load workspace.json", Err: err, Hint: "fix workspace.json or delete it to use the defaults"}
	}
	var s Settings
	if err := json.Unmarshal(data, &s); err != nil {
		return &Error{Kind: ErrInvalid, Op: "load workspace.json", Err: err}
	}
	w.settings = s.WithDefaults()
	return nil
}

// Close releases the root directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Dir is the absolute path of the root.
func (w *Workspace) Dir() string { return w.dir }

// Root is the os.Root every access goes through. Callers must not close it.
func (w *Workspace) Root() *os.Root { return w.root }

// Settings are the effective settings (workspace.json over the defaults).
func (w *Workspace) Settings() Settings { return w.settings }

// Now is the workspace clock.
// Times are kept to the millisecond, as every file writes them
// (2024-01-15T10:00:00.123Z).
func (w *Workspace) Now() time.Time { return w.now().UTC().Truncate(time.Millisecond) }

// FilePerm and DirPerm follow the workspace mode.
func (w *Workspace) FilePerm() os.FileMode {
	if w.settings.Mode == "private" {
		return 0o600
	}
	return 0o644
}

// DirPerm is the permission for new directories.
func (w *Workspace) DirPerm() os.FileMode {
	if w.settings.Mode == "private" {
		return 0o700
	}
	return 0o755
}

// Write atomically and durably writes data to name (relative, slash
// separated), creating its directory. It is the one writer every file goes
// through.
func (w *Workspace) Write(name string, data []byte) error {
	if err := atomicfile.MkdirAll(w.root, filepath.Dir(filepath.FromSlash(name)), w.DirPerm()); err != nil {
		return fmt.Errorf("create directory for %s: %w", name, err)
	}
	return atomicfile.WriteFile(w.root, name, data, w.FilePerm())
}

// WriteJSON writes v as canonical JSON with Write.
func (w *Workspace) WriteJSON(name string, v any) error {
	data, err := atomicfile.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return w.Write(name, data)
}

// readJSON reads an agent-written file under the daemon's limits and
// decodes it into v.
func (w *Workspace) readJSON(name string, v any) error {
	data, err := ReadAgentFile(w.root, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return err
	}
	return decodeStrict(name, data, w.settings.Limits.MaxDepth, v)
}

// ReadFile reads a file of the tree with the daemon's safety rules
// (regular files only, size limit).
func (w *Workspace) ReadFile(name string) ([]byte, error) {
	return ReadAgentFile(w.root, name, int64(w.settings.Limits.MaxFileBytes))
}

func (w *Workspace) exists(name string) bool {
	_, err := w.root.Lstat(name)
	return err == nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
