package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

var _ workspace.EntryHistory = (*Store)(nil)

// A memory entry's earlier versions (workspace.EntryHistory) are kept in
// the scope's directory under .history/<key file name>/, one file a
// version named by workspace.EntryHistoryName, so the names sort oldest
// first. The dot keeps them out of every listing of the scope. A version
// is kept under the entry's lock, before the write that replaces it or
// the delete that removes it; retention removes the oldest past the
// policy's HistoryKeep (PruneHistory).

// historyDir is where the kept versions of a scope's entries are.
const historyDir = workspace.EntryHistoryDir

// keepEntry keeps old, the version of the entry file base in d that a
// write is about to replace, when s is a memory scope.
func (w *Store) keepEntry(s workspace.Scope, d *os.Root, base string, old workspace.Entry) error {
	if !workspace.KeepsHistory(s) {
		return nil
	}
	dir := path.Join(historyDir, strings.TrimSuffix(base, ".json"))
	if err := d.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keep the replaced version of %q: %w", old.Key, err)
	}
	data, err := atomicfile.Marshal(old)
	if err != nil {
		return fmt.Errorf("encode entry %s: %w", old.Key, err)
	}
	rel := path.Join(dir, workspace.EntryHistoryName(old))
	if err := atomicfile.WriteFile(d, rel, data, w.FilePerm()); err != nil {
		return fmt.Errorf("keep the replaced version of %q: %w", old.Key, err)
	}
	return nil
}

// EntryHistory lists the kept versions of key in memory scope s, oldest
// first.
func (w *Store) EntryHistory(ctx context.Context, s workspace.Scope, key string) ([]workspace.Entry, error) {
	if err := workspace.CheckHistoryScope(s); err != nil {
		return nil, err
	}
	dir, name, err := w.entryPath(s, key)
	if err != nil {
		return nil, err
	}
	hist := path.Join(dir, historyDir, strings.TrimSuffix(path.Base(name), ".json"))
	d, err := w.root.OpenRoot(hist)
	if errors.Is(err, fs.ErrNotExist) {
		return []workspace.Entry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", hist, err)
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", hist, err)
	}
	slices.Sort(names)
	out := []workspace.Entry{}
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		data, err := agentfile.Read(d, n, int64(w.settings.Limits.MaxFileBytes))
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned by retention since the listing
		}
		if err != nil {
			return nil, err
		}
		e, err := w.decodeEntry(path.Join(hist, n), data)
		if err != nil {
			continue // not a kept version: passed over, as a listing does
		}
		if e.Key != key {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// PruneHistory removes, of every global and agent memory entry's kept
// versions, all but the keep newest, and returns how many it removed (in
// a dry run, would remove). It takes no entry lock: a write keeps a
// version newer than any it removes, and a reader passes over a version
// removed since its listing.
func (w *Store) PruneHistory(ctx context.Context, keep int, dryRun bool) (int, error) {
	scopes := []string{"memory/global"}
	agents, err := w.dirNames("memory/agents")
	if err != nil {
		return 0, err
	}
	for _, a := range agents {
		scopes = append(scopes, path.Join("memory/agents", a))
	}
	n := 0
	for _, sd := range scopes {
		hist := path.Join(sd, historyDir)
		keys, err := w.dirNames(hist)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			dir := path.Join(hist, k)
			names, err := w.dirNames(dir)
			if err != nil {
				return n, err
			}
			names = slices.DeleteFunc(names, func(name string) bool { return !workspace.IsEntryHistoryName(name) })
			if len(names) <= keep {
				continue
			}
			slices.Sort(names)
			for _, name := range names[:len(names)-keep] {
				if !dryRun {
					if err := w.root.Remove(path.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return n, fmt.Errorf("prune the history of %s: %w", dir, err)
					}
				}
				n++
			}
		}
	}
	return n, nil
}

// dirNames lists the names in directory rel of the tree, none when it is
// missing or not a directory.
func (w *Store) dirNames(rel string) ([]string, error) {
	if fi, err := w.root.Lstat(rel); err != nil || !fi.IsDir() {
		return nil, nil
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", rel, err)
	}
	return names, nil
}
