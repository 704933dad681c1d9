package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

var _ workspace.MemoryStore = (*Store)(nil)

// Namespaced memory on the tree (workspace.MemoryDir): a directory per
// namespace (workspace.Namespace.Dir) with workspace.NamespaceFile naming
// the namespace, and each item <key>.json, written atomically under its
// lock in .locks/; the memory events in workspace.MemoryEventsFile. A
// namespace's directory stays when its last item goes: removing it could
// race a put that has opened it.
const memoryLockUser = "retention"

// nsDir is one namespace's directory.
type nsDir struct {
	ns  workspace.Namespace
	dir string // from the root
}

// PutMemory creates or replaces an item under its lock.
func (w *Store) PutMemory(ctx context.Context, req workspace.MemoryPutRequest) (workspace.MemoryItem, error) {
	if err := workspace.CheckMemoryPut(req, w.settings.Limits); err != nil {
		return workspace.MemoryItem{}, err
	}
	dir := req.Namespace.Dir()
	d, err := w.openScopeDir(dir, true)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	defer d.Close()
	if _, err := d.Lstat(workspace.NamespaceFile); isNotExist(err) {
		data, err := atomicfile.Marshal(workspace.NamespaceDoc{Namespace: req.Namespace})
		if err == nil {
			err = atomicfile.WriteFile(d, workspace.NamespaceFile, data, w.FilePerm())
		}
		if err != nil {
			return workspace.MemoryItem{}, fmt.Errorf("write %s/%s: %w", dir, workspace.NamespaceFile, err)
		}
	}
	base := workspace.EncodeKey(req.Key) + ".json"
	l, err := w.lockIn(ctx, d, dir, base, req.Agent)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	defer l.Release()
	cur, err := w.readItem(d, dir, base, req.Namespace, req.Key)
	if err != nil && !errors.Is(err, workspace.ErrInvalid) {
		// A corrupt item is replaced, as a put is create-or-replace.
		return workspace.MemoryItem{}, err
	}
	it, err := workspace.ApplyPut(cur, req, w.Now())
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	data, err := atomicfile.Marshal(it)
	if err != nil {
		return workspace.MemoryItem{}, fmt.Errorf("encode memory item %q: %w", req.Key, err)
	}
	if err := atomicfile.WriteFile(d, base, data, w.FilePerm()); err != nil {
		return workspace.MemoryItem{}, err
	}
	w.memoryEvent(ctx, workspace.MemoryEvent("stored", it.Namespace, it.Key, req.Agent, it.Version, it.UpdatedAt))
	return it, nil
}

// GetMemory reads one live item.
func (w *Store) GetMemory(ctx context.Context, ns workspace.Namespace, key string) (workspace.MemoryItem, error) {
	if err := workspace.CheckMemoryGet(ns, key); err != nil {
		return workspace.MemoryItem{}, err
	}
	dir := ns.Dir()
	d, err := w.root.OpenRoot(dir)
	if isNotExist(err) {
		return workspace.MemoryItem{}, workspace.NoSuchItem("get", ns, key)
	}
	if err != nil {
		return workspace.MemoryItem{}, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	it, err := w.readItem(d, dir, workspace.EncodeKey(key)+".json", ns, key)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	if it == nil || !it.Live(w.Now()) {
		return workspace.MemoryItem{}, workspace.NoSuchItem("get", ns, key)
	}
	return *it, nil
}

// DeleteMemory removes a live item under its lock.
func (w *Store) DeleteMemory(ctx context.Context, req workspace.MemoryDeleteRequest) error {
	if err := workspace.CheckMemoryDelete(req); err != nil {
		return err
	}
	dir := req.Namespace.Dir()
	d, err := w.root.OpenRoot(dir)
	if isNotExist(err) {
		return workspace.NoSuchItem("delete", req.Namespace, req.Key)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	base := workspace.EncodeKey(req.Key) + ".json"
	l, err := w.lockIn(ctx, d, dir, base, req.Agent)
	if err != nil {
		return err
	}
	defer l.Release()
	cur, err := w.readItem(d, dir, base, req.Namespace, req.Key)
	if err != nil {
		return err
	}
	now := w.Now()
	if err := workspace.ApplyDelete(cur, req, now); err != nil {
		return err
	}
	if err := d.Remove(base); err != nil {
		return fmt.Errorf("delete %s/%s: %w", dir, base, err)
	}
	if err := atomicfile.SyncDir(d, "."); err != nil {
		return err
	}
	w.memoryEvent(ctx, workspace.MemoryEvent("deleted", req.Namespace, req.Key, req.Agent, 0, now))
	return nil
}

// SearchMemory reads the namespaces under the prefix in order, and their
// live items by key, until the page is full.
func (w *Store) SearchMemory(ctx context.Context, req workspace.MemorySearchRequest) ([]workspace.MemoryItem, error) {
	req, err := workspace.CheckSearch(req)
	if err != nil {
		return nil, err
	}
	nds, err := w.namespaceDirs(ctx, func(ns workspace.Namespace) bool { return ns.HasPrefix(req.Prefix) })
	if err != nil {
		return nil, err
	}
	now := w.Now()
	out := []workspace.MemoryItem{}
	skip := req.Offset
	for _, nd := range nds {
		err := w.namespaceItems(ctx, nd, func(it workspace.MemoryItem) bool {
			if !it.Live(now) || !req.Filter.Match(it.Value) {
				return true
			}
			if skip > 0 {
				skip--
				return true
			}
			out = append(out, it)
			return len(out) < req.Limit
		})
		if err != nil {
			return nil, err
		}
		if len(out) == req.Limit {
			break
		}
	}
	return out, nil
}

// ListMemoryNamespaces lists the namespaces that hold a live item.
func (w *Store) ListMemoryNamespaces(ctx context.Context, q workspace.NamespaceQuery) ([]workspace.Namespace, error) {
	q, err := workspace.CheckNamespaceQuery(q)
	if err != nil {
		return nil, err
	}
	nds, err := w.namespaceDirs(ctx, func(ns workspace.Namespace) bool { return workspace.MatchNamespace(ns, q.Prefix, q.Suffix) })
	if err != nil {
		return nil, err
	}
	now := w.Now()
	var live []workspace.Namespace
	for _, nd := range nds {
		found := false
		err := w.namespaceItems(ctx, nd, func(it workspace.MemoryItem) bool {
			found = it.Live(now)
			return !found
		})
		if err != nil {
			return nil, err
		}
		if found {
			live = append(live, nd.ns)
		}
	}
	return workspace.ListNamespaces(live, q), nil
}

// PruneMemory removes the items expired at now, each under its lock
// and read again under it.
func (w *Store) PruneMemory(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	nds, err := w.namespaceDirs(ctx, func(workspace.Namespace) bool { return true })
	if err != nil {
		return 0, err
	}
	n := 0
	for _, nd := range nds {
		var expired []string
		err := w.namespaceItems(ctx, nd, func(it workspace.MemoryItem) bool {
			if !it.Live(now) {
				expired = append(expired, it.Key)
			}
			return true
		})
		if err != nil {
			return n, err
		}
		for _, key := range expired {
			if dryRun {
				n++
				continue
			}
			gone, err := w.removeExpired(ctx, nd, key, now)
			if err != nil {
				return n, err
			}
			if gone {
				n++
			}
		}
	}
	return n, nil
}

func (w *Store) removeExpired(ctx context.Context, nd nsDir, key string, now time.Time) (bool, error) {
	d, err := w.root.OpenRoot(nd.dir)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", nd.dir, err)
	}
	defer d.Close()
	base := workspace.EncodeKey(key) + ".json"
	l, err := w.lockIn(ctx, d, nd.dir, base, memoryLockUser)
	if err != nil {
		return false, err
	}
	defer l.Release()
	cur, err := w.readItem(d, nd.dir, base, nd.ns, key)
	if err != nil || cur == nil || cur.Live(now) {
		return false, err
	}
	if err := d.Remove(base); err != nil {
		return false, fmt.Errorf("delete %s/%s: %w", nd.dir, base, err)
	}
	return true, atomicfile.SyncDir(d, ".")
}

// ReadMemoryEvents reads memory/namespaces/events.log from byte offset
// pos.
func (w *Store) ReadMemoryEvents(ctx context.Context, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	if pos < 0 {
		return pos, workspace.Invalidf("read memory events", "read from 0, or from a position a read gave back", "negative position %d", pos)
	}
	f, err := w.openLog(workspace.MemoryEventsFile, os.O_RDONLY)
	if err != nil {
		if isNotExist(err) {
			return pos, nil
		}
		return pos, err
	}
	defer f.Close()
	if _, err := f.Seek(pos, io.SeekStart); err != nil {
		return pos, err
	}
	n, err := scanEventsAt(f, func(e workspace.Event, start, end int64) {
		each(workspace.PositionedEvent{Event: e, Start: pos + start, End: pos + end})
	})
	return pos + n, err
}

// memoryEvent appends e to the memory events' log in one write. The item
// is durable already; the log is a feed, so a failed append fails
// nothing.
func (w *Store) memoryEvent(ctx context.Context, e workspace.Event) {
	e = workspace.Attributed(ctx, e)
	f, err := w.openLog(workspace.MemoryEventsFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return
	}
	_, _ = f.WriteString(workspace.FormatEvent(e) + "\n")
	_ = f.Close()
}

// namespaceDirs lists the namespace directories whose namespace keep
// accepts, sorted by namespace. A directory that does not name its
// namespace as its name says is passed over.
func (w *Store) namespaceDirs(ctx context.Context, keep func(workspace.Namespace) bool) ([]nsDir, error) {
	f, err := w.root.Open(workspace.MemoryDir)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", workspace.MemoryDir, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", workspace.MemoryDir, err)
	}
	var out []nsDir
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(name) != 32 || strings.Trim(name, "0123456789abcdef") != "" {
			continue
		}
		dir := path.Join(workspace.MemoryDir, name)
		data, err := agentfile.Read(w.root, path.Join(dir, workspace.NamespaceFile), 64<<10)
		if err != nil {
			continue
		}
		var doc workspace.NamespaceDoc
		if json.Unmarshal(data, &doc) != nil || workspace.ValidateNamespace(doc.Namespace) != nil ||
			doc.Namespace.Dir() != dir || !keep(doc.Namespace) {
			continue
		}
		out = append(out, nsDir{ns: doc.Namespace, dir: dir})
	}
	slices.SortFunc(out, func(a, b nsDir) int { return workspace.CompareNamespaces(a.ns, b.ns) })
	return out, nil
}

// namespaceItems calls each for the items of a namespace, expired ones
// too, in key order, reading each file only when its turn comes, until
// each returns false; a file that is not an item of it is passed over.
func (w *Store) namespaceItems(ctx context.Context, nd nsDir, each func(workspace.MemoryItem) bool) error {
	d, err := w.root.OpenRoot(nd.dir)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", nd.dir, err)
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return fmt.Errorf("open %s: %w", nd.dir, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", nd.dir, err)
	}
	type named struct{ key, file string }
	var keys []named
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		if key, err := workspace.DecodeKey(strings.TrimSuffix(n, ".json")); err == nil {
			keys = append(keys, named{key, n})
		}
	}
	slices.SortFunc(keys, func(a, b named) int { return strings.Compare(a.key, b.key) })
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		it, err := w.readItem(d, nd.dir, k.file, nd.ns, k.key)
		if err != nil || it == nil {
			continue
		}
		if !each(*it) {
			return nil
		}
	}
	return nil
}

// readItem reads item base of the namespace directory d (dir from the
// root): nil when there is none, ErrInvalid when the file is not the
// item of ns and key.
func (w *Store) readItem(d *os.Root, dir, base string, ns workspace.Namespace, key string) (*workspace.MemoryItem, error) {
	data, err := agentfile.Read(d, base, int64(w.settings.Limits.MaxFileBytes))
	if isNotExist(err) || errors.Is(err, workspace.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	name := path.Join(dir, base)
	var it workspace.MemoryItem
	if err := json.Unmarshal(data, &it); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err}
	}
	if it.Key != key || !slices.Equal(it.Namespace, ns) || len(it.Value) == 0 {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "not the memory item its name says"}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, it.Value); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err}
	}
	it.Value = buf.Bytes()
	return &it, nil
}
