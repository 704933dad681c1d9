package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// dump is every row of every table of s's schema, for telling whether a
// refused write changed anything.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	ctx := t.Context()
	rows, err := s.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range tables {
		if name == "lease" {
			continue // renewed by the daemon, not written by a refused call
		}
		var text string
		err := s.pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(string_agg(r::text, E'\n' ORDER BY r::text), '') FROM %q AS r`, name)).Scan(&text)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:\n%s\n", name, text)
	}
	return b.String()
}

// TestBadInput holds the PostgreSQL store to the bad and odd input
// tables every store meets.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	storetest.BadInput(t, s, func(t *testing.T) string { return dump(t, s) })
}

// TestImportRefusesNULDescription: a tree entry whose description holds
// a NUL (which the file tree kept) is refused by import with ErrInvalid
// naming the file, and nothing is loaded.
func TestImportRefusesNULDescription(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	w, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := atomicfile.Marshal(workspace.Entry{Key: "k", ShortDescription: "a\x00b", StoredBy: "a", CreatedAt: at, UpdatedAt: at, Version: 1, Value: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory", "global", "k.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := newStore(t)
	_, err = s.Import(ctx, dir, ImportOptions{})
	if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), "k.json") || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("import: %v, want ErrInvalid naming k.json and the NUL", err)
	}
	if items, err := s.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}); err != nil || len(items) != 0 {
		t.Errorf("after a refused import: %v, %v; want no entry", items, err)
	}
}
