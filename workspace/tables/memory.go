package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// Namespaced memory moves as the tree keeps it (workspace.MemoryDir):
//
//	memory/namespaces/<hash>/.namespace.json → none: written again from the items
//	memory/namespaces/<hash>/<key>.json      → memory_items
//	memory/namespaces/events.log             → memory_events (one row per line)
//
// An item's row keeps no agent on the tree (stored_by is empty after an
// import; the events name the agents).

// memoryFile reads one file under memory/namespaces/ (p, its path).
func (r *importer) memoryFile(p, body string) error {
	if p == workspace.MemoryEventsFile {
		return r.memoryEvents(p, body)
	}
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if path.Dir(dir) != workspace.MemoryDir {
		return r.refuse(p, "not a memory item (memory/namespaces/<namespace>/<key>.json)", "move the file out of memory/namespaces/")
	}
	if name == workspace.NamespaceFile {
		var doc workspace.NamespaceDoc
		if err := json.Unmarshal([]byte(body), &doc); err != nil || workspace.ValidateNamespace(doc.Namespace) != nil || doc.Namespace.Dir() != dir {
			return r.refuse(p, "does not name the namespace of its directory", "restore it from git or a copy")
		}
		return nil
	}
	enc, found := strings.CutSuffix(name, ".json")
	if !found {
		return r.refuse(p, "not a memory item (<key>.json)", "move the file out of memory/namespaces/")
	}
	key, err := workspace.DecodeKey(enc)
	if err != nil {
		return r.refuse(p, err.Error(), "move the file out of memory/namespaces/")
	}
	var it workspace.MemoryItem
	if err := json.Unmarshal([]byte(body), &it); err != nil {
		return r.refuse(p, "memory item does not parse: "+err.Error(), "fix the file and import again")
	}
	if it.Key != key || workspace.ValidateNamespace(it.Namespace) != nil || it.Namespace.Dir() != dir {
		return r.refuse(p, "holds another item than its name and directory say", "fix the file and import again")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, it.Value); err != nil || !bytes.HasPrefix(compact.Bytes(), []byte("{")) {
		return r.refuse(p, "its value is not a JSON object", "fix the file and import again")
	}
	if again, err := atomicfile.Marshal(it); err != nil || string(again) != body {
		return r.refuse(p, "is not in the canonical form workspaced writes, and would not export byte for byte",
			"put it again with 'workspaced memory put', then import")
	}
	var exp any
	if it.ExpiresAt != nil {
		exp = *it.ExpiresAt
	}
	r.add(`INSERT INTO memory_items (ns_key, key, namespace, version, created_at, updated_at, expires_at, stored_by, value)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '', $8)`,
		it.Namespace.Sortable(), key, it.Namespace.String(), it.Version, it.CreatedAt, it.UpdatedAt, exp, compact.String())
	return nil
}

func (r *importer) memoryEvents(p, body string) error {
	if body != "" && !strings.HasSuffix(body, "\n") {
		return r.refuse(p, "the last line is torn (no newline at the end)", "end the file with a newline, or remove its torn last line")
	}
	for i, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if body == "" {
			break
		}
		e, err := workspace.ParseEvent(line)
		if err != nil {
			return r.refuse(p, fmt.Sprintf("line %d: %v", i+1, err), "fix or remove the line and import again")
		}
		r.add("INSERT INTO memory_events (time, line) VALUES ($1, $2)", e.Time, line)
	}
	return nil
}

// exportMemory writes the memory items, each namespace's file, and the
// memory events.
func exportMemory(ctx context.Context, tx Tx, w *treeWriter) error {
	var last workspace.Namespace
	err := eachRow(ctx, tx, `SELECT namespace, key, version, created_at, updated_at, expires_at, value
		FROM memory_items ORDER BY ns_key, key`, func(scan func(...any) error) error {
		var ns, value string
		var it workspace.MemoryItem
		var exp *time.Time
		if err := scan(&ns, &it.Key, &it.Version, Time{&it.CreatedAt}, Time{&it.UpdatedAt}, NullTime{&exp}, &value); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(ns), &it.Namespace); err != nil {
			return fmt.Errorf("memory item %q: namespace %s: %w", it.Key, ns, err)
		}
		it.CreatedAt, it.UpdatedAt, it.Value = it.CreatedAt.UTC(), it.UpdatedAt.UTC(), json.RawMessage(value)
		if exp != nil {
			e := exp.UTC()
			it.ExpiresAt = &e
		}
		dir := it.Namespace.Dir()
		if !slices.Equal(it.Namespace, last) {
			doc, err := atomicfile.Marshal(workspace.NamespaceDoc{Namespace: it.Namespace})
			if err != nil {
				return err
			}
			w.write(path.Join(dir, workspace.NamespaceFile), string(doc))
			last = it.Namespace
		}
		data, err := atomicfile.Marshal(it)
		if err != nil {
			return fmt.Errorf("memory item %s %q: %w", it.Namespace, it.Key, err)
		}
		w.write(path.Join(dir, workspace.EncodeKey(it.Key)+".json"), string(data))
		return nil
	})
	if err != nil {
		return fmt.Errorf("export memory items: %w", err)
	}
	var log strings.Builder
	err = eachRow(ctx, tx, "SELECT line FROM memory_events ORDER BY id", func(scan func(...any) error) error {
		var line string
		if err := scan(&line); err != nil {
			return err
		}
		log.WriteString(line)
		log.WriteByte('\n')
		return nil
	})
	if err != nil {
		return fmt.Errorf("export memory events: %w", err)
	}
	if log.Len() > 0 {
		w.write(workspace.MemoryEventsFile, log.String())
	}
	return nil
}

// NullTime scans a time column that may be NULL: nil for NULL, else as
// Time does.
type NullTime struct{ T **time.Time }

// Scan implements sql.Scanner.
func (t NullTime) Scan(src any) error {
	if src == nil {
		*t.T = nil
		return nil
	}
	var v time.Time
	if err := (Time{&v}).Scan(src); err != nil {
		return err
	}
	*t.T = &v
	return nil
}
