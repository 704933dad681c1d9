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
// version named <updated_at in ms, 13 digits>-<version, 6 digits>.json,
// so the names sort oldest first. The dot keeps them out of every
// listing of the scope. A version is kept under the entry's lock, before
// the write that replaces it or the delete that removes it.

// historyDir is where the kept versions of a scope's entries are.
const historyDir = ".history"

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
	rel := path.Join(dir, fmt.Sprintf("%013d-%06d.json", old.UpdatedAt.UnixMilli(), old.Version))
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
