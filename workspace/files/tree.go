package files

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
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// Open opens an existing workspace at dir and loads workspace.json.
func Open(dir string, opt workspace.Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "open workspace " + dir, Msg: "no workspace here",
			Hint: "create a workspace there, or open the directory that holds one"}
	}
	if !isWorkspaceDir(abs) {
		return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "open workspace " + dir, Msg: "the directory holds neither workspace.json nor tasks/",
			Hint: "create a workspace there, or open the directory that holds one"}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	w := &Store{root: root, dir: abs, now: opt.Now}
	if w.now == nil {
		w.now = time.Now
	}
	if opt.DefaultSettings {
		w.settings = workspace.Settings{}.WithDefaults()
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
func Init(dir string, opt workspace.Options) (*Store, error) {
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
		{"workspace.json", workspace.Settings{}.WithDefaults()},
		{"config/agents.json", workspace.AgentCards{Agents: []workspace.AgentCard{}}},
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

func (w *Store) loadSettings() error {
	data, err := agentfile.Read(w.root, "workspace.json", 1<<20)
	if errors.Is(err, workspace.ErrNotFound) {
		w.settings = workspace.Settings{}.WithDefaults()
		return nil
	}
	if err != nil {
		return err
	}
	if err := schemas.Validate(schemas.KindWorkspace, data); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "load workspace.json", Err: err, Hint: "fix workspace.json or delete it to use the defaults"}
	}
	var s workspace.Settings
	if err := json.Unmarshal(data, &s); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "load workspace.json", Err: err}
	}
	w.settings = s.WithDefaults()
	return nil
}

// Close releases the root directory handle.
func (w *Store) Close() error { return w.root.Close() }

// Dir is the absolute path of the root.
func (w *Store) Dir() string { return w.dir }

// Root is the os.Root every access goes through. Callers must not close it.
func (w *Store) Root() *os.Root { return w.root }

// Settings are the effective settings (workspace.json over the defaults).
func (w *Store) Settings() workspace.Settings { return w.settings }

// Now is the workspace clock.
// Times are kept to the millisecond, as every file writes them
// (2024-01-15T10:00:00.123Z).
func (w *Store) Now() time.Time { return w.now().UTC().Truncate(time.Millisecond) }

// FilePerm and DirPerm follow the workspace mode.
func (w *Store) FilePerm() os.FileMode {
	if w.settings.Mode == "private" {
		return 0o600
	}
	return 0o644
}

// DirPerm is the permission for new directories.
func (w *Store) DirPerm() os.FileMode {
	if w.settings.Mode == "private" {
		return 0o700
	}
	return 0o755
}

// Write atomically and durably writes data to name (relative, slash
// separated), creating its directory. It is the one writer every file goes
// through.
func (w *Store) Write(name string, data []byte) error {
	if err := atomicfile.MkdirAll(w.root, filepath.Dir(filepath.FromSlash(name)), w.DirPerm()); err != nil {
		return fmt.Errorf("create directory for %s: %w", name, err)
	}
	return atomicfile.WriteFile(w.root, name, data, w.FilePerm())
}

// WriteBuffers is Write of the bytes of bufs, one after the other, with no
// copy of them made first (atomicfile.WriteBuffers).
func (w *Store) WriteBuffers(name string, bufs [][]byte) error {
	if err := atomicfile.MkdirAll(w.root, filepath.Dir(filepath.FromSlash(name)), w.DirPerm()); err != nil {
		return fmt.Errorf("create directory for %s: %w", name, err)
	}
	return atomicfile.WriteBuffers(w.root, name, bufs, w.FilePerm())
}

// WriteJSON writes v as canonical JSON with Write.
func (w *Store) WriteJSON(name string, v any) error {
	data, err := atomicfile.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return w.Write(name, data)
}

// readJSON reads an agent-written file under the daemon's limits and
// decodes it into v.
func (w *Store) readJSON(name string, v any) error {
	data, err := agentfile.Read(w.root, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return err
	}
	return workspace.DecodeStrict(name, data, w.settings.Limits.MaxDepth, v)
}

// ReadFile reads a file of the tree with the daemon's safety rules
// (regular files only, size limit).
func (w *Store) ReadFile(name string) ([]byte, error) {
	return agentfile.Read(w.root, name, int64(w.settings.Limits.MaxFileBytes))
}

func (w *Store) exists(name string) bool {
	_, err := w.root.Lstat(name)
	return err == nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// timeDuration is a setting's Duration as a time.Duration.
func timeDuration(d workspace.Duration) time.Duration { return time.Duration(d) }
