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
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

var _ workspace.Entries = (*Store)(nil)

func (w *Store) entryPath(s workspace.Scope, key string) (dir, name string, err error) {
	dir, err = s.Dir()
	if err != nil {
		return "", "", err
	}
	if err := workspace.ValidateKey(key); err != nil {
		return "", "", err
	}
	if s.Kind == workspace.ScopeThread || s.Kind == workspace.ScopeSession {
		if err := w.requireTask(s.TaskID); err != nil {
			return "", "", err
		}
	}
	return dir, path.Join(dir, workspace.EncodeKey(key)+".json"), nil
}

func (w *Store) checkValue(v json.RawMessage) ([]string, error) {
	if len(v) == 0 {
		return nil, workspace.FieldErr(workspace.ErrInvalid, "value", workspace.FieldValue, `give a JSON value, e.g. {"a":1} or "text"`, "missing value")
	}
	if len(v) > w.settings.Limits.ValueMaxBytes {
		return nil, workspace.Invalidf("value", "store large data as several keys or as files in the task directory",
			"value is %d bytes, over the %d-byte limit", len(v), w.settings.Limits.ValueMaxBytes)
	}
	if _, err := workspace.ParseValue(v, w.settings.Limits.MaxDepth); err != nil {
		return nil, err
	}
	var warns []string
	if len(v) > w.settings.Limits.ValueWarnBytes {
		warns = append(warns, fmt.Sprintf("value is %d bytes, over the %d-byte warning size: consider splitting it", len(v), w.settings.Limits.ValueWarnBytes))
	}
	return warns, nil
}

// StoreEntry creates or replaces an entry. created_at is kept on replace
// and version is bumped. The read-modify-write happens under the key's lock.
func (w *Store) StoreEntry(ctx context.Context, s workspace.Scope, req workspace.StoreRequest) (workspace.Result, error) {
	dir, name, err := w.entryPath(s, req.Key)
	if err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateID("agent", req.Agent); err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateDescription(req.Description); err != nil {
		return workspace.Result{}, err
	}
	warns, err := w.checkValue(req.Value)
	if err != nil {
		return workspace.Result{}, err
	}
	d, err := w.openScopeDir(dir, true)
	if err != nil {
		return workspace.Result{}, err
	}
	defer d.Close()
	base := path.Base(name)
	l, err := w.lockIn(ctx, d, dir, base, req.Agent)
	if err != nil {
		return workspace.Result{}, err
	}
	defer l.Release()
	now := w.Now()
	e := workspace.Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, CreatedAt: now, UpdatedAt: now, Version: 1, Value: req.Value}
	old, err := w.readEntryIn(d, base, name)
	if req.IfAbsent && !errors.Is(err, workspace.ErrNotFound) {
		if err == nil || errors.Is(err, workspace.ErrInvalid) {
			return workspace.Result{}, &workspace.Error{Kind: workspace.ErrConflict, Op: fmt.Sprintf("create %s %q", s.Label(), req.Key),
				Msg: fmt.Sprintf("the key exists (version %d)", old.Version), Hint: "read it (get), or store it without create-only to replace it"}
		}
		return workspace.Result{}, err
	}
	switch {
	case err == nil:
		e.CreatedAt = old.CreatedAt
		e.Version = old.Version + 1
		if err := w.keepEntry(s, d, base, old); err != nil {
			return workspace.Result{}, err
		}
	case !errors.Is(err, workspace.ErrNotFound):
		// A corrupt entry is replaced: store is create-or-replace.
		if !errors.Is(err, workspace.ErrInvalid) {
			return workspace.Result{}, err
		}
	}
	if err := w.writeEntryIn(d, base, e); err != nil {
		return workspace.Result{}, err
	}
	w.entryEvent(ctx, s, "stored", e.Key, req.Agent, e.Version)
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// GetEntry reads one entry; a missing key is ErrNotFound.
func (w *Store) GetEntry(ctx context.Context, s workspace.Scope, key string) (workspace.Entry, error) {
	_, name, err := w.entryPath(s, key)
	if err != nil {
		return workspace.Entry{}, err
	}
	e, err := w.readEntry(name)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Entry{}, workspace.NotFoundf(fmt.Sprintf("get %s %q", s.Label(), key), s.ListHint(), "no such key")
	}
	return e, err
}

// UpdateEntry changes the description and/or value of an existing entry
// under its lock; a missing key is ErrNotFound, a stale IfVersion is
// ErrConflict.
func (w *Store) UpdateEntry(ctx context.Context, s workspace.Scope, req workspace.UpdateRequest) (workspace.Result, error) {
	dir, name, err := w.entryPath(s, req.Key)
	if err != nil {
		return workspace.Result{}, err
	}
	if err := workspace.ValidateID("agent", req.Agent); err != nil {
		return workspace.Result{}, err
	}
	if req.Description != nil {
		if err := workspace.ValidateDescription(*req.Description); err != nil {
			return workspace.Result{}, err
		}
	}
	var warns []string
	if req.Value != nil {
		if warns, err = w.checkValue(req.Value); err != nil {
			return workspace.Result{}, err
		}
	} else if req.Description == nil {
		return workspace.Result{}, workspace.Invalidf("update "+req.Key, "give a new description, a new value or both", "nothing to update")
	}
	d, err := w.openScopeDir(dir, false)
	if isNotExist(err) {
		return workspace.Result{}, workspace.NotFoundf(fmt.Sprintf("update %s %q", s.Label(), req.Key), "create it first with store", "no such key")
	}
	if err != nil {
		return workspace.Result{}, err
	}
	defer d.Close()
	base := path.Base(name)
	l, err := w.lockIn(ctx, d, dir, base, req.Agent)
	if err != nil {
		return workspace.Result{}, err
	}
	defer l.Release()
	e, err := w.readEntryIn(d, base, name)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Result{}, workspace.NotFoundf(fmt.Sprintf("update %s %q", s.Label(), req.Key), "create it first with store", "no such key")
	}
	if err != nil {
		return workspace.Result{}, err
	}
	if req.IfVersion > 0 && e.Version != req.IfVersion {
		return workspace.Result{}, &workspace.Error{Kind: workspace.ErrConflict, Op: fmt.Sprintf("update %s %q", s.Label(), req.Key),
			Msg:  fmt.Sprintf("version is %d, not %d", e.Version, req.IfVersion),
			Hint: "read it again (get) and retry with the current version"}
	}
	if err := w.keepEntry(s, d, base, e); err != nil {
		return workspace.Result{}, err
	}
	if req.Description != nil {
		e.ShortDescription = *req.Description
	}
	if req.Value != nil {
		e.Value = req.Value
	}
	e.StoredBy = req.Agent
	e.UpdatedAt = w.Now()
	e.Version++
	if err := w.writeEntryIn(d, base, e); err != nil {
		return workspace.Result{}, err
	}
	w.entryEvent(ctx, s, "updated", e.Key, req.Agent, e.Version)
	return workspace.Result{Entry: e, Warnings: warns}, nil
}

// DeleteEntry removes a key under its lock; a missing key is ErrNotFound,
// a stale IfVersion ErrConflict.
func (w *Store) DeleteEntry(ctx context.Context, s workspace.Scope, req workspace.DeleteRequest) error {
	key, agent := req.Key, req.Agent
	dir, name, err := w.entryPath(s, key)
	if err != nil {
		return err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return err
	}
	d, err := w.openScopeDir(dir, false)
	if isNotExist(err) {
		return workspace.NotFoundf(fmt.Sprintf("delete %s %q", s.Label(), key), s.ListHint(), "no such key")
	}
	if err != nil {
		return err
	}
	defer d.Close()
	base := path.Base(name)
	l, err := w.lockIn(ctx, d, dir, base, agent)
	if err != nil {
		return err
	}
	defer l.Release()
	if req.IfVersion > 0 || workspace.KeepsHistory(s) {
		e, err := w.readEntryIn(d, base, name)
		if errors.Is(err, workspace.ErrNotFound) {
			return workspace.NotFoundf(fmt.Sprintf("delete %s %q", s.Label(), key), s.ListHint(), "no such key")
		}
		// A memory entry that does not parse is removed without a kept
		// version: there is nothing readable to keep.
		if err != nil && (req.IfVersion > 0 || !errors.Is(err, workspace.ErrInvalid)) {
			return err
		}
		if req.IfVersion > 0 && e.Version != req.IfVersion {
			return &workspace.Error{Kind: workspace.ErrConflict, Op: fmt.Sprintf("delete %s %q", s.Label(), key),
				Msg: fmt.Sprintf("version is %d, not %d", e.Version, req.IfVersion), Hint: "read it again (get) and decide from what it holds now"}
		}
		if err == nil {
			if err := w.keepEntry(s, d, base, e); err != nil {
				return err
			}
		}
	}
	if err := d.Remove(base); err != nil {
		if isNotExist(err) {
			return workspace.NotFoundf(fmt.Sprintf("delete %s %q", s.Label(), key), s.ListHint(), "no such key")
		}
		return fmt.Errorf("delete %s: %w", name, err)
	}
	if err := atomicfile.SyncDir(d, "."); err != nil {
		return err
	}
	w.entryEvent(ctx, s, "deleted", key, agent, 0)
	return nil
}

func (w *Store) entryEvent(ctx context.Context, s workspace.Scope, verb, key, agent string, version int) {
	if s.Kind != workspace.ScopeThread && s.Kind != workspace.ScopeSession {
		return
	}
	attrs := map[string]string{"key": key, "agent": agent}
	if id := workspace.TokenOf(ctx); id != "" {
		attrs[workspace.EventToken] = id
	}
	if version > 0 {
		attrs["version"] = strconv.Itoa(version)
	}
	if s.Kind == workspace.ScopeSession {
		attrs["scope"] = "session"
		attrs["thread"] = s.ThreadID
	}
	// The entry is already durable; a failed event append is not worth
	// failing the store for, and events.log is a feed, not the record.
	_ = w.AppendEvent(ctx, workspace.Event{Name: s.EventPrefix() + "_" + verb, TaskID: s.TaskID, Attrs: attrs})
}

// openScopeDir opens an entry directory (relative to the root) through the
// root, so a symlink leading out of it is refused, creating it when create
// is set. Every later access of the operation goes through the returned
// handle: one path walk per operation, not one per file access.
func (w *Store) openScopeDir(dir string, create bool) (*os.Root, error) {
	d, err := w.root.OpenRoot(dir)
	if err == nil || !create || !isNotExist(err) {
		if err != nil {
			if isNotExist(err) {
				return nil, err
			}
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		return d, nil
	}
	if err := w.root.MkdirAll(dir, w.DirPerm()); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if d, err = w.root.OpenRoot(dir); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return d, nil
}

// writeEntryIn writes e canonically, atomically and durably as base in d.
func (w *Store) writeEntryIn(d *os.Root, base string, e workspace.Entry) error {
	data, err := atomicfile.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode entry %s: %w", e.Key, err)
	}
	return atomicfile.WriteFile(d, base, data, w.FilePerm())
}

func (w *Store) readEntry(name string) (workspace.Entry, error) {
	return w.readEntryIn(w.root, name, name)
}

// readEntryIn reads the entry file name inside r; display is its path
// from the workspace root, for errors.
func (w *Store) readEntryIn(r *os.Root, name, display string) (workspace.Entry, error) {
	data, err := agentfile.Read(r, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return workspace.Entry{}, err
	}
	e, err := w.decodeEntry(display, data)
	if err != nil {
		return workspace.Entry{}, err
	}
	if want, err := workspace.DecodeKey(strings.TrimSuffix(path.Base(display), ".json")); err == nil && e.Key != want {
		return workspace.Entry{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + display, Msg: fmt.Sprintf("holds key %q, which does not match its file name", e.Key)}
	}
	return e, nil
}

// decodeEntry decodes the entry file name holding data: its value handed
// back compact, as it was given.
func (w *Store) decodeEntry(name string, data []byte) (workspace.Entry, error) {
	e, err := parseEntry(name, data, entryDepth(w.settings.Limits.MaxDepth))
	if err != nil {
		return workspace.Entry{}, err
	}
	if e.Key == "" || e.Value == nil {
		return workspace.Entry{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Msg: "not an entry (key or value missing)"}
	}
	// The file holds the value re-indented inside the entry; hand back the
	// value itself, compact, as it was given.
	var buf bytes.Buffer
	buf.Grow(len(e.Value))
	if err := json.Compact(&buf, e.Value); err != nil {
		return workspace.Entry{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + name, Err: err}
	}
	e.Value = buf.Bytes()
	return e, nil
}

// ListEntries returns the manifest of a scope, sorted by key. It reads each
// file only up to its value (the canonical field order puts value last), so
// listing costs little however large the values; a file written in another
// field order is parsed whole. Files that are not entries (foreign names,
// symlinks, corrupt JSON, names that are not <key>.json) are skipped;
// ListEntriesReport says which. Dot-files (temporary files, .locks/) are
// passed over without a word.
func (w *Store) ListEntries(ctx context.Context, s workspace.Scope) ([]workspace.ManifestItem, error) {
	items, _, err := w.ListEntriesReport(ctx, s)
	return items, err
}

// ListEntriesReport is ListEntries plus the files it skipped.
func (w *Store) ListEntriesReport(ctx context.Context, s workspace.Scope) ([]workspace.ManifestItem, []workspace.Skipped, error) {
	dir, err := s.Dir()
	if err != nil {
		return nil, nil, err
	}
	if s.Kind == workspace.ScopeThread || s.Kind == workspace.ScopeSession {
		if err := w.requireTask(s.TaskID); err != nil {
			return nil, nil, err
		}
	}
	d, err := w.root.OpenRoot(dir)
	if err != nil {
		if isNotExist(err) {
			return []workspace.ManifestItem{}, nil, nil
		}
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer f.Close()
	items := []workspace.ManifestItem{}
	var skipped []workspace.Skipped
	mr := &manifestReader{dirFd: int(f.Fd()), dir: filepath.Join(w.dir, filepath.FromSlash(dir)), maxBytes: int64(w.settings.Limits.MaxFileBytes), maxDepth: entryDepth(w.settings.Limits.MaxDepth)}
	for {
		// Names only: the type of each file is checked when it is opened,
		// and ReadDir may lstat every entry to learn it.
		ents, err := f.Readdirnames(512)
		for _, n := range ents {
			if strings.HasPrefix(n, ".") {
				continue
			}
			if !strings.HasSuffix(n, ".json") {
				skipped = append(skipped, workspace.Skipped{File: path.Join(dir, n), Reason: "not an entry file: entries are named <key>.json"})
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			key, kerr := workspace.DecodeKey(strings.TrimSuffix(n, ".json"))
			if kerr != nil {
				skipped = append(skipped, workspace.Skipped{File: path.Join(dir, n), Reason: kerr.Error()})
				continue
			}
			it, rerr := mr.read(n)
			if rerr != nil {
				skipped = append(skipped, workspace.Skipped{File: path.Join(dir, n), Reason: rerr.Error()})
				continue
			}
			if it.Key != key {
				skipped = append(skipped, workspace.Skipped{File: path.Join(dir, n), Reason: fmt.Sprintf("holds key %q, which does not match its file name", it.Key)})
				continue
			}
			items = append(items, it)
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", dir, err)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items, skipped, nil
}
