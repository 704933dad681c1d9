package sqlite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/storetest"
)

// dump is every row of every table of s, for telling whether a refused
// write changed anything.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	tables, err := strings1(s.rdb.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range tables {
		rows, err := s.rdb.Query(`SELECT * FROM "` + name + `" ORDER BY rowid`)
		if err != nil {
			rows, err = s.rdb.Query(`SELECT * FROM "` + name + `"`)
		}
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %q\n", name, vals)
		}
		rows.Close()
	}
	return b.String()
}

// TestBadInput holds the SQLite store to the bad and odd input tables
// every store meets.
func TestBadInput(t *testing.T) {
	s, _ := newStore(t)
	storetest.BadInput(t, s, func(t *testing.T) string { return dump(t, s) })
}
