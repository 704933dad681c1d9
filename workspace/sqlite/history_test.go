package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/tables"
)

// oldDatabase makes a database of schema version 7 (states and backups
// as tables) at path, with a task with a state and three backups, one
// with a state and none, and one with backups and no state.
func oldDatabase(t *testing.T, path string) {
	t.Helper()
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, "immediate", "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`}
	for _, m := range ms[:7] {
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		stmts = append(stmts, `INSERT INTO tasks (id, created_at, doc) VALUES ('`+id+`', '2026-01-01T00:00:00.000Z', '{}')`)
	}
	stmts = append(stmts,
		`INSERT INTO backups (task_id, journal_seq, doc, saved_at, name) VALUES ('t1', 1, '{"journal_seq":1}', '2026-01-01T00:00:01.000Z', 'state.0001.json')`,
		`INSERT INTO backups (task_id, journal_seq, doc, saved_at) VALUES ('t3', 4, '{"journal_seq":4}', '2026-01-01T00:00:02.000Z')`,
		`INSERT INTO backups (task_id, journal_seq, doc, saved_at) VALUES ('t1', 2, '{"journal_seq":2}', '2026-01-01T00:00:03.000Z')`,
		`INSERT INTO backups (task_id, journal_seq, doc, saved_at) VALUES ('t1', 3, '{"journal_seq":3}', '2026-01-01T00:00:04.000Z')`,
		`INSERT INTO states (task_id, journal_seq, doc, epoch, updated_at) VALUES ('t2', 7, '{"journal_seq":7}', 0, '2026-01-01T00:00:05.000Z')`,
		`INSERT INTO states (task_id, journal_seq, doc, epoch, updated_at) VALUES ('t1', 4, '{"journal_seq":4}', 0, '2026-01-01T00:00:06.000Z')`,
		`UPDATE states SET doc = '{"journal_seq":4,"x":1}' WHERE task_id = 't1'`, // version 1
	)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("version 7: %s: %v", q, err)
		}
	}
}

// rowsOf reads every row of q, each as one line of its columns.
func rowsOf(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	fmt.Fprintln(&b, strings.Join(cols, "|"))
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestStateHistoryMigratesOlderDatabase: a database of version 7 migrated
// (0008) reads the same states and backups, column for column and row for
// row, numbers and all; the next backup is numbered after them.
func TestStateHistoryMigratesOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.db")
	oldDatabase(t, path)
	const states, backups = "SELECT * FROM states ORDER BY task_id", "SELECT * FROM backups ORDER BY n"
	db, err := sql.Open("sqlite", dsn(path, "immediate", "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	beforeStates, beforeBackups := rowsOf(t, db, states), rowsOf(t, db, backups)
	if !strings.Contains(beforeStates, "t1 4 {\"journal_seq\":4,\"x\":1} 0 2026-01-01T00:00:06.000Z 1") {
		t.Fatalf("version 7's states:\n%s", beforeStates)
	}
	s, n, err := Init(ctx, "sqlite:"+path)
	if err != nil || n != SchemaVersion()-7 {
		t.Fatalf("init of version 7: %d migrations, %v", n, err)
	}
	defer s.Close()
	if got := rowsOf(t, db, states); got != beforeStates {
		t.Errorf("states after the migration:\n%s\nbefore:\n%s", got, beforeStates)
	}
	if got := rowsOf(t, db, backups); got != beforeBackups {
		t.Errorf("backups after the migration:\n%s\nbefore:\n%s", got, beforeBackups)
	}
	list, err := s.ListBackups(ctx, "t1")
	if err != nil || len(list) != 3 || list[2].Name != "state.0001.json" {
		t.Fatalf("t1's backups: %+v, %v", list, err)
	}
	var last int64
	if err := db.QueryRow("SELECT max(n) FROM backups").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`INSERT INTO backups (task_id, journal_seq, doc) VALUES ('t2', 6, '{"journal_seq":6}')`); err != nil {
		t.Fatal(err)
	}
	var next int64
	if err := db.QueryRow("SELECT max(n) FROM backups").Scan(&next); err != nil || next <= last {
		t.Errorf("a new backup numbered %d (%v), the migrated ones up to %d", next, err, last)
	}
	if got := rowsOf(t, db, "SELECT task_id, journal_seq FROM states ORDER BY task_id"); got != "task_id|journal_seq\nt1 4\nt2 7\n" {
		t.Errorf("a backup inserted after the state changed the states:\n%s", got)
	}
}

// TestStateWritesThroughViews: the store's own connection (an import, a
// repair by hand) writes the states and backups views as it wrote the
// tables: an insert of a second state of a task is refused, an update in
// place raises the version, a delete of a state leaves its backups.
func TestStateWritesThroughViews(t *testing.T) {
	t.Parallel()
	s, _ := guarded(t) // t1: a state (journal_seq 1) and a backup
	db := s.DB()
	if _, err := db.Exec(`INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 2, '{}', 0)`); err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed: states.task_id") {
		t.Errorf("a second state of t1: %v", err)
	}
	var v0, v1 int
	if err := db.QueryRow("SELECT version FROM states WHERE task_id = 't1'").Scan(&v0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE states SET doc = '{"a":1}' WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT version FROM states WHERE task_id = 't1'").Scan(&v1); err != nil || v1 != v0+1 {
		t.Errorf("version after an update by hand: %d (%v), want %d", v1, err, v0+1)
	}
	// Two states more, each making the one before a backup; a backup's
	// number is its row's, in the order the rows were written (t1's
	// first state before its backup of seq 0).
	for seq := 2; seq <= 3; seq++ {
		if _, err := db.Exec(`INSERT INTO state_history (task_id, journal_seq, doc) VALUES ('t1', $1, '{}')`, seq); err != nil {
			t.Fatal(err)
		}
	}
	if got := rowsOf(t, db, "SELECT journal_seq FROM backups WHERE task_id = 't1' ORDER BY n"); got != "journal_seq\n1\n0\n2\n" {
		t.Errorf("backups once two states followed:\n%s", got)
	}
	before := rowsOf(t, db, "SELECT * FROM backups ORDER BY n")
	if _, err := db.Exec(`DELETE FROM states WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, db, "SELECT * FROM states"); got != "task_id|journal_seq|doc|epoch|updated_at|version\n" {
		t.Errorf("states after the delete:\n%s", got)
	}
	if got := rowsOf(t, db, "SELECT * FROM backups ORDER BY n"); got != before {
		t.Errorf("backups after the state's delete:\n%s\nbefore:\n%s", got, before)
	}
	if _, err := db.Exec(`DELETE FROM backups WHERE journal_seq = 1`); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, db, "SELECT journal_seq FROM backups ORDER BY n"); got != "journal_seq\n0\n2\n" {
		t.Errorf("backups after one's delete:\n%s", got)
	}
}
