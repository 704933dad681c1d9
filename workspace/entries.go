package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
)

// ScopeKind names where an entry lives (SPEC §3).
type ScopeKind string

// The four entry scopes.
const (
	ScopeThread  ScopeKind = "thread"  // tasks/<task>/env/: env data shared by the delegation tree
	ScopeSession ScopeKind = "session" // tasks/<task>/sessions/<thread>/: one thread's private entries
	ScopeAgent   ScopeKind = "agent"   // memory/agents/<agent>/: one agent's long-term memory ("po")
	ScopeGlobal  ScopeKind = "global"  // memory/global/: shared by every agent and task ("env")
)

// Scope locates an entry directory. TaskID is needed for thread and
// session scopes, ThreadID for session, Agent for agent.
type Scope struct {
	Kind     ScopeKind
	TaskID   string
	ThreadID string
	Agent    string
}

// ParseScope maps the CLI and MCP names (thread, session, agent, global and
// the seed names env data / po / env) to a ScopeKind.
func ParseScope(s string) (ScopeKind, error) {
	switch s {
	case "thread", "env_data":
		return ScopeThread, nil
	case "session":
		return ScopeSession, nil
	case "agent", "po":
		return ScopeAgent, nil
	case "global", "env":
		return ScopeGlobal, nil
	}
	return "", invalidf("scope "+strconv.Quote(s), "use one of thread, session, agent (po), global (env)", "unknown scope")
}

// Dir is the scope's directory relative to the root, after validating ids.
func (s Scope) Dir() (string, error) {
	switch s.Kind {
	case ScopeThread:
		if err := ValidateID("task id", s.TaskID); err != nil {
			return "", err
		}
		return path.Join("tasks", s.TaskID, "env"), nil
	case ScopeSession:
		if err := ValidateID("task id", s.TaskID); err != nil {
			return "", err
		}
		if err := ValidateID("thread id", s.ThreadID); err != nil {
			return "", err
		}
		return path.Join("tasks", s.TaskID, "sessions", s.ThreadID), nil
	case ScopeAgent:
		if err := ValidateID("agent", s.Agent); err != nil {
			return "", err
		}
		return path.Join("memory", "agents", s.Agent), nil
	case ScopeGlobal:
		return path.Join("memory", "global"), nil
	}
	return "", invalidf("scope", "use one of thread, session, agent, global", "unknown scope %q", s.Kind)
}

func (s Scope) eventPrefix() string {
	if s.Kind == ScopeThread {
		return "env"
	}
	return "memory"
}

// StoreRequest is a store (create or replace).
type StoreRequest struct {
	Key         string
	Description string
	Value       json.RawMessage
	Agent       string
}

// UpdateRequest changes an existing entry. Nil fields are kept.
type UpdateRequest struct {
	Key         string
	Description *string
	Value       json.RawMessage // nil keeps the value
	Agent       string
	// IfVersion, when > 0, makes the update a compare-and-swap: it fails
	// with ErrConflict unless the stored version equals it.
	IfVersion int
}

// Result is what a write returns: the entry as written and any warnings
// (a value over the warning size).
type Result struct {
	Entry    Entry
	Warnings []string
}

// Entries is the narrow interface every entry store implements; the JSON
// tree is the default. A server-backed store can implement the same
// operations without changes to the CLI, the daemon or the MCP layer.
type Entries interface {
	StoreEntry(ctx context.Context, s Scope, req StoreRequest) (Result, error)
	GetEntry(ctx context.Context, s Scope, key string) (Entry, error)
	ListEntries(ctx context.Context, s Scope) ([]ManifestItem, error)
	UpdateEntry(ctx context.Context, s Scope, req UpdateRequest) (Result, error)
	DeleteEntry(ctx context.Context, s Scope, key, agent string) error
}

var _ Entries = (*Workspace)(nil)

func (w *Workspace) entryPath(s Scope, key string) (dir, name string, err error) {
	dir, err = s.Dir()
	if err != nil {
		return "", "", err
	}
	if err := ValidateKey(key); err != nil {
		return "", "", err
	}
	if s.Kind == ScopeThread || s.Kind == ScopeSession {
		if !w.exists(path.Join("tasks", s.TaskID, "task.json")) {
			return "", "", notFoundf("task "+s.TaskID, "list tasks with 'workspaced task list'", "no such task")
		}
	}
	return dir, path.Join(dir, EncodeKey(key)+".json"), nil
}

func (w *Workspace) checkValue(v json.RawMessage) ([]string, error) {
	if len(v) == 0 {
		return nil, invalidf("value", "give a JSON value, e.g. --value '{\"a\":1}' or --value '\"text\"'", "missing value")
	}
	if len(v) > w.settings.Limits.ValueMaxBytes {
		return nil, invalidf("value", "store large data as several keys or as files in the task directory",
			"value is %d bytes, over the %d-byte limit", len(v), w.settings.Limits.ValueMaxBytes)
	}
	if _, err := ParseValue(v, w.settings.Limits.MaxDepth); err != nil {
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
func (w *Workspace) StoreEntry(ctx context.Context, s Scope, req StoreRequest) (Result, error) {
	dir, name, err := w.entryPath(s, req.Key)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateID("agent", req.Agent); err != nil {
		return Result{}, err
	}
	warns, err := w.checkValue(req.Value)
	if err != nil {
		return Result{}, err
	}
	if err := w.root.MkdirAll(dir, w.DirPerm()); err != nil {
		return Result{}, fmt.Errorf("create %s: %w", dir, err)
	}
	l, err := w.LockFile(ctx, name, req.Agent)
	if err != nil {
		return Result{}, err
	}
	defer l.Release()
	now := w.Now()
	e := Entry{Key: req.Key, ShortDescription: req.Description, StoredBy: req.Agent, CreatedAt: now, UpdatedAt: now, Version: 1, Value: compactValue(req.Value)}
	old, err := w.readEntry(name)
	switch {
	case err == nil:
		e.CreatedAt = old.CreatedAt
		e.Version = old.Version + 1
	case !errors.Is(err, ErrNotFound):
		// A corrupt entry is replaced: store is create-or-replace.
		if !errors.Is(err, ErrInvalid) {
			return Result{}, err
		}
	}
	if err := w.WriteJSON(name, e); err != nil {
		return Result{}, err
	}
	w.entryEvent(s, "stored", e.Key, req.Agent, e.Version)
	return Result{Entry: e, Warnings: warns}, nil
}

// GetEntry reads one entry; a missing key is ErrNotFound.
func (w *Workspace) GetEntry(ctx context.Context, s Scope, key string) (Entry, error) {
	_, name, err := w.entryPath(s, key)
	if err != nil {
		return Entry{}, err
	}
	e, err := w.readEntry(name)
	if errors.Is(err, ErrNotFound) {
		return Entry{}, notFoundf(fmt.Sprintf("get %s %q", s.Kind, key), "list the keys with 'workspaced env list' or 'memory list'", "no such key")
	}
	return e, err
}

// UpdateEntry changes the description and/or value of an existing entry
// under its lock; a missing key is ErrNotFound, a stale IfVersion is
// ErrConflict.
func (w *Workspace) UpdateEntry(ctx context.Context, s Scope, req UpdateRequest) (Result, error) {
	dir, name, err := w.entryPath(s, req.Key)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateID("agent", req.Agent); err != nil {
		return Result{}, err
	}
	var warns []string
	if req.Value != nil {
		if warns, err = w.checkValue(req.Value); err != nil {
			return Result{}, err
		}
	} else if req.Description == nil {
		return Result{}, invalidf("update "+req.Key, "pass --description and/or --value", "nothing to update")
	}
	if err := w.root.MkdirAll(dir, w.DirPerm()); err != nil {
		return Result{}, fmt.Errorf("create %s: %w", dir, err)
	}
	l, err := w.LockFile(ctx, name, req.Agent)
	if err != nil {
		return Result{}, err
	}
	defer l.Release()
	e, err := w.readEntry(name)
	if errors.Is(err, ErrNotFound) {
		return Result{}, notFoundf(fmt.Sprintf("update %s %q", s.Kind, req.Key), "create it first with store", "no such key")
	}
	if err != nil {
		return Result{}, err
	}
	if req.IfVersion > 0 && e.Version != req.IfVersion {
		return Result{}, &Error{Kind: ErrConflict, Op: fmt.Sprintf("update %s %q", s.Kind, req.Key),
			Msg:  fmt.Sprintf("version is %d, not %d", e.Version, req.IfVersion),
			Hint: "read it again (get) and retry with the current version"}
	}
	if req.Description != nil {
		e.ShortDescription = *req.Description
	}
	if req.Value != nil {
		e.Value = compactValue(req.Value)
	}
	e.StoredBy = req.Agent
	e.UpdatedAt = w.Now()
	e.Version++
	if err := w.WriteJSON(name, e); err != nil {
		return Result{}, err
	}
	w.entryEvent(s, "updated", e.Key, req.Agent, e.Version)
	return Result{Entry: e, Warnings: warns}, nil
}

// DeleteEntry removes a key under its lock; a missing key is ErrNotFound.
func (w *Workspace) DeleteEntry(ctx context.Context, s Scope, key, agent string) error {
	dir, name, err := w.entryPath(s, key)
	if err != nil {
		return err
	}
	if err := ValidateID("agent", agent); err != nil {
		return err
	}
	if !w.exists(dir) {
		return notFoundf(fmt.Sprintf("delete %s %q", s.Kind, key), "", "no such key")
	}
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return err
	}
	defer l.Release()
	if err := w.root.Remove(name); err != nil {
		if isNotExist(err) {
			return notFoundf(fmt.Sprintf("delete %s %q", s.Kind, key), "", "no such key")
		}
		return fmt.Errorf("delete %s: %w", name, err)
	}
	if err := atomicfile.SyncDir(w.root, dir); err != nil {
		return err
	}
	w.entryEvent(s, "deleted", key, agent, 0)
	return nil
}

func (w *Workspace) entryEvent(s Scope, verb, key, agent string, version int) {
	if s.Kind != ScopeThread && s.Kind != ScopeSession {
		return
	}
	attrs := map[string]string{"key": key, "agent": agent}
	if version > 0 {
		attrs["version"] = strconv.Itoa(version)
	}
	if s.Kind == ScopeSession {
		attrs["scope"] = "session"
		attrs["thread"] = s.ThreadID
	}
	// The entry is already durable; a failed event append is not worth
	// failing the store for, and events.log is a feed, not the record.
	_ = w.AppendEvent(Event{Name: s.eventPrefix() + "_" + verb, TaskID: s.TaskID, Attrs: attrs})
}

func compactValue(v json.RawMessage) json.RawMessage {
	// Values were validated by checkValue; keep the agent's bytes, the
	// canonical encoder re-indents them.
	return v
}

func (w *Workspace) readEntry(name string) (Entry, error) {
	data, err := ReadAgentFile(w.root, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return Entry{}, err
	}
	e, err := parseEntry(name, data, w.settings.Limits.MaxDepth)
	if err != nil {
		return Entry{}, err
	}
	if want, err := DecodeKey(strings.TrimSuffix(path.Base(name), ".json")); err == nil && e.Key != want {
		return Entry{}, &Error{Kind: ErrInvalid, Op: "read " + name, Msg: fmt.Sprintf("holds key %q, which does not match its file name", e.Key)}
	}
	if e.Key == "" || e.Value == nil {
		return Entry{}, &Error{Kind: ErrInvalid, Op: "read " + name, Msg: "not an entry (key or value missing)"}
	}
	// The file holds the value re-indented inside the entry; hand back the
	// value itself, compact, as it was given.
	var buf bytes.Buffer
	buf.Grow(len(e.Value))
	if err := json.Compact(&buf, e.Value); err != nil {
		return Entry{}, &Error{Kind: ErrInvalid, Op: "read " + name, Err: err}
	}
	e.Value = buf.Bytes()
	return e, nil
}

// ListEntries returns the manifest of a scope, sorted by key. It reads each
// file only up to its value (the canonical field order puts value last), so
// listing costs little however large the values; a file written in another
// field order is parsed whole. Files that are not entries (foreign names,
// symlinks, corrupt JSON) are skipped; ListEntriesReport says which.
func (w *Workspace) ListEntries(ctx context.Context, s Scope) ([]ManifestItem, error) {
	items, _, err := w.ListEntriesReport(ctx, s)
	return items, err
}

// Skipped names a file a listing passed over and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// ListEntriesReport is ListEntries plus the files it skipped.
func (w *Workspace) ListEntriesReport(ctx context.Context, s Scope) ([]ManifestItem, []Skipped, error) {
	dir, err := s.Dir()
	if err != nil {
		return nil, nil, err
	}
	if (s.Kind == ScopeThread || s.Kind == ScopeSession) && !w.exists(path.Join("tasks", s.TaskID, "task.json")) {
		return nil, nil, notFoundf("task "+s.TaskID, "list tasks with 'workspaced task list'", "no such task")
	}
	d, err := w.root.OpenRoot(dir)
	if err != nil {
		if isNotExist(err) {
			return []ManifestItem{}, nil, nil
		}
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	f, err := d.Open(".")
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer f.Close()
	items := []ManifestItem{}
	var skipped []Skipped
	br := bufio.NewReaderSize(nil, 4096)
	for {
		ents, err := f.ReadDir(512)
		for _, de := range ents {
			n := de.Name()
			if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			key, kerr := DecodeKey(strings.TrimSuffix(n, ".json"))
			if kerr != nil {
				skipped = append(skipped, Skipped{File: path.Join(dir, n), Reason: kerr.Error()})
				continue
			}
			it, rerr := w.readManifest(d, n, br)
			if rerr != nil {
				skipped = append(skipped, Skipped{File: path.Join(dir, n), Reason: rerr.Error()})
				continue
			}
			if it.Key != key {
				skipped = append(skipped, Skipped{File: path.Join(dir, n), Reason: fmt.Sprintf("holds key %q, which does not match its file name", it.Key)})
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

// readManifest streams the tokens of one entry file until "value".
func (w *Workspace) readManifest(d *os.Root, name string, br *bufio.Reader) (ManifestItem, error) {
	f, err := openAgentFile(d, name)
	if err != nil {
		return ManifestItem{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ManifestItem{}, err
	}
	if !st.Mode().IsRegular() {
		return ManifestItem{}, fmt.Errorf("is a %s", fileKind(st.Mode()))
	}
	if st.Size() > int64(w.settings.Limits.MaxFileBytes) {
		return ManifestItem{}, fmt.Errorf("is %d bytes, over the limit", st.Size())
	}
	br.Reset(f)
	it, ok, err := scanManifest(br)
	if err != nil {
		return ManifestItem{}, err
	}
	if !ok {
		// Another field order: parse the whole file.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return ManifestItem{}, err
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(w.settings.Limits.MaxFileBytes)))
		if err != nil {
			return ManifestItem{}, err
		}
		e, err := parseEntry(name, data, w.settings.Limits.MaxDepth)
		if err != nil {
			return ManifestItem{}, err
		}
		it = ManifestItem{Key: e.Key, ShortDescription: e.ShortDescription, StoredBy: e.StoredBy, UpdatedAt: e.UpdatedAt, Version: e.Version}
	}
	it.Size = st.Size()
	return it, nil
}

// scanManifest reads top-level fields until "value". ok is false when the
// value came before the manifest fields were all seen (or never came), in
// which case the caller parses the whole file.
func scanManifest(r io.Reader) (it ManifestItem, ok bool, err error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return it, false, describeJSONError(nil, err)
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return it, false, errors.New("not a JSON object")
	}
	var seen int
	const all = 5
	seenFields := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return it, false, describeJSONError(nil, err)
		}
		field, _ := tok.(string)
		if err := checkEntryField(field, seenFields); err != nil {
			return it, false, err
		}
		var dst any
		switch field {
		case "key":
			dst = &it.Key
		case "short_description":
			dst = &it.ShortDescription
		case "stored_by":
			dst = &it.StoredBy
		case "updated_at":
			dst = &it.UpdatedAt
		case "version":
			dst = &it.Version
		case "value":
			return it, seen == all, nil
		}
		if dst == nil {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return it, false, describeJSONError(nil, err)
			}
			continue
		}
		if err := dec.Decode(dst); err != nil {
			return it, false, fmt.Errorf("field %s: %w", field, err)
		}
		seen++
	}
	return it, false, nil
}

// entryFields are the top-level fields of an entry file as written.
var entryFields = []string{"key", "short_description", "stored_by", "created_at", "updated_at", "version", "value"}

// checkEntryField refuses a top-level field that would make the streamed
// manifest and a whole-file parse disagree: an entry field given twice
// (the streamed reader stops at the first, a full parse keeps the last) or
// spelled in another case (encoding/json matches it, the streamed reader
// does not). seen collects the entry fields met so far.
func checkEntryField(field string, seen map[string]bool) error {
	for _, f := range entryFields {
		if field == f {
			if seen[f] {
				return fmt.Errorf("field %q appears twice", f)
			}
			seen[f] = true
			return nil
		}
		if strings.EqualFold(field, f) {
			return fmt.Errorf("field %q: entries spell it %q", field, f)
		}
	}
	return nil
}

// parseEntry decodes a whole entry file with the same field rules as the
// streamed manifest reader, so both read the same entry from one file.
func parseEntry(name string, data []byte, maxDepth int) (Entry, error) {
	var e Entry
	if err := decodeStrict(name, data, maxDepth, &e); err != nil {
		return Entry{}, err
	}
	seen := map[string]bool{}
	for _, f := range topLevelFields(data) {
		if err := checkEntryField(f, seen); err != nil {
			return Entry{}, &Error{Kind: ErrInvalid, Op: "parse " + name, Err: err}
		}
	}
	return e, nil
}

// topLevelFields lists the field names of the top-level object of data,
// which must already be known to be valid JSON. It scans bytes once,
// skipping values, and unescapes only names that hold escapes.
func topLevelFields(data []byte) []string {
	var names []string
	depth, expectKey := 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j, esc := i+1, false
			for ; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					esc = true
					j++
				}
			}
			if depth == 1 && expectKey {
				name := string(data[i+1 : min(j, len(data))])
				if esc {
					_ = json.Unmarshal(data[i:min(j+1, len(data))], &name)
				}
				names = append(names, name)
				expectKey = false
			}
			i = j
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return names
}
