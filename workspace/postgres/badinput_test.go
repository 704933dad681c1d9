package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// dump is every row of every table of s's schema, for telling whether a
// refused write changed anything: one statement (made at s's first dump)
// reads them all, rather than a round trip a table.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	ctx := t.Context()
	q, err := dumpQuery(t, s)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:\n%s\n", name, text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dumpQueries holds each store's dump statement.
var dumpQueries sync.Map // *Store → string

// dumpQuery is the statement reading every table of s's schema but the
// lease (renewed by the daemon, not written by a refused call), a row a
// table: its name and its rows as text, sorted.
func dumpQuery(t *testing.T, s *Store) (string, error) {
	if q, ok := dumpQueries.Load(s); ok {
		return q.(string), nil
	}
	rows, err := s.pool.Query(t.Context(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'lease' ORDER BY table_name`)
	if err != nil {
		return "", err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	parts := make([]string, len(tables))
	for i, name := range tables {
		parts[i] = fmt.Sprintf(`SELECT %d AS n, '%s' AS name, coalesce((SELECT string_agg(r::text, E'\n' ORDER BY r::text) FROM %s AS r), '')`,
			i, strings.ReplaceAll(name, "'", "''"), pgx.Identifier{name}.Sanitize())
	}
	q := "SELECT name, text FROM (" + strings.Join(parts, " UNION ALL ") + ") AS d (n, name, text) ORDER BY n"
	v, _ := dumpQueries.LoadOrStore(s, q)
	return v.(string), nil
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
