package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// dump is every row of every table of s, for telling whether a refused
// write changed anything. Its statements are prepared once a store
// (parsing them again at each dump was most of what a bad-input table
// cost).
func dump(t *testing.T, s *Store) string {
	t.Helper()
	stmts, err := dumpStmts(s)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, st := range stmts {
		rows, err := st.stmt.Query()
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
			fmt.Fprintf(&b, "%s %q\n", st.table, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// tableStmt reads every row of a table.
type tableStmt struct {
	table string
	stmt  *sql.Stmt
}

// prepared holds each store's dump statements; they go with its
// connections when it closes.
var prepared sync.Map // *Store → []tableStmt

// dumpStmts prepares, on s's first dump, a statement reading each
// table's rows (in rowid order where the table has one).
func dumpStmts(s *Store) ([]tableStmt, error) {
	if v, ok := prepared.Load(s); ok {
		return v.([]tableStmt), nil
	}
	tables, err := strings1(s.rdb.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"))
	if err != nil {
		return nil, err
	}
	var stmts []tableStmt
	for _, name := range tables {
		st, err := s.rdb.Prepare(`SELECT * FROM "` + name + `" ORDER BY rowid`)
		if err != nil {
			st, err = s.rdb.Prepare(`SELECT * FROM "` + name + `"`)
		}
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, tableStmt{name, st})
	}
	v, _ := prepared.LoadOrStore(s, stmts)
	return v.([]tableStmt), nil
}

// TestBadInput holds the SQLite store to the bad and odd input tables
// every store meets.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	storetest.BadInput(t, s, func(t *testing.T) string { return dump(t, s) })
}

// TestOddValuesExact: SQLite keeps a value byte for byte, white space and
// all, where the file tree writes it compacted.
func TestOddValuesExact(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for name, v := range storetest.OddValues(s.Settings().Limits) {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: name, Value: v, Agent: "a"}); err != nil {
			t.Fatalf("store %s: %v", name, err)
		}
		if e, err := s.GetEntry(ctx, sc, name); err != nil || string(e.Value) != string(v) {
			t.Errorf("value %s read back as %.80q, %v; want %.80q", name, e.Value, err, v)
		}
	}
}
