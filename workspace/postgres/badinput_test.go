package postgres

import (
	"fmt"
	"strings"
	"testing"

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
	s, _ := newStore(t)
	storetest.BadInput(t, s, func(t *testing.T) string { return dump(t, s) })
}
