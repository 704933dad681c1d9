package sqlite_test

import (
	"database/sql"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// guardedWrites are an agent's writes of the tables only workspaced
// writes, each refused by the guard, by the table it names.
var guardedWrites = []struct{ table, sql string }{
	{"states", `INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('other', 1, '{}', 0)`},
	{"states", `UPDATE states SET doc = json_set(doc, '$.status', 'completed')`},
	{"states", `DELETE FROM states`},
	{"journal", `INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('hive', 9999, 'x', '.claim.forged', '{}', 0)`},
	{"journal", `UPDATE journal SET record = '{}'`},
	{"journal", `DELETE FROM journal`},
	{"backups", `INSERT INTO backups (task_id, journal_seq, doc) VALUES ('hive', 0, '{}')`},
	{"backups", `UPDATE backups SET doc = '{}'`},
	{"backups", `DELETE FROM backups`},
	{"events", `INSERT INTO events (task_id, time, line) VALUES ('hive', 'x', 'forged')`},
	{"events", `UPDATE events SET line = 'forged'`},
	{"events", `DELETE FROM events`},
}

// snapshot is every row of the guarded tables, as text.
func snapshot(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT task_id || '|' || journal_seq || '|' || doc FROM states ORDER BY task_id",
		"SELECT task_id || '|' || seq || '|' || name || '|' || record FROM journal ORDER BY task_id, seq",
		"SELECT n || '|' || journal_seq || '|' || doc FROM backups ORDER BY n",
		"SELECT id || '|' || line FROM events ORDER BY id",
		"SELECT version || '|' || name FROM schema_migrations ORDER BY version",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("%s: no rows, so a write that got through would change nothing", q)
		}
	}
	return b.String()
}

// TestGuardRefusesAgents: on a workspace the daemon has been working, the
// sqlite3 shell's and Python's INSERT, UPDATE and DELETE of states,
// journal, backups, events and schema_migrations are each refused with
// the guard's message and change nothing, while the agents' own writes (a
// marker) go through, and the CLI and the daemon go on: a claim made
// after them is won.
func TestGuardRefusesAgents(t *testing.T) {
	t.Parallel()
	shell := need(t, "sqlite3", "sqlite3", "install Debian's sqlite3 package")
	py := need(t, "python3", "python3", "Python's sqlite3 cannot be tried")
	w, db := clitest.NewSQLite(t)
	approvedPlan(w, "hive", []string{"s1", "s2"})
	w.Serve()
	if r := w.Run("claim", "--task", "hive", "--agent", "a1", "--subtask", "s1", "--wait", "30s"); r.Code != 0 {
		t.Fatalf("claim before: %v", r)
	}
	s, err := sqlite.Open(t.Context(), w.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := snapshot(t, s.DB())

	const pyExec = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute(sys.argv[2])\n"
	tools := map[string]func(q string) []string{
		"sqlite3": func(q string) []string { return []string{shell, db, q} },
		"python3": func(q string) []string { return []string{py, "-c", pyExec, db, q} },
	}
	writes := guardedWrites
	for _, op := range []string{"INSERT INTO schema_migrations (version, name) VALUES (99, 'x')",
		"UPDATE schema_migrations SET name = 'x'", "DELETE FROM schema_migrations"} {
		writes = append(writes, struct{ table, sql string }{"schema_migrations", op})
	}
	for tool, argv := range tools {
		for _, wr := range writes {
			want := "workspaced: only the workspaced daemon writes " + wr.table
			if wr.table == "schema_migrations" {
				want = "workspaced: only workspaced writes schema_migrations; run workspaced init to migrate"
			}
			a := argv(wr.sql)
			out, err := exec.Command(a[0], a[1:]...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), want) || strings.Contains(string(out), "no such") {
				t.Errorf("%s: %s: %v, %s\nwant a failure saying %q", tool, wr.sql, err, out, want)
			}
		}
		// What agents do write still goes in.
		a := argv(fmt.Sprintf("INSERT INTO products (task_id, path, body) VALUES ('hive', 'outputs/%s.json', '{}')", tool))
		if out, err := exec.Command(a[0], a[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: a product: %v, %s", tool, err, out)
		}
	}
	if after := snapshot(t, s.DB()); after != before {
		t.Errorf("the refused writes changed the guarded tables:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// The daemon and the CLI still write them.
	r := w.Run("claim", "--task", "hive", "--agent", "a2", "--subtask", "s2", "--wait", "30s", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"won"`) {
		t.Fatalf("claim after: %v", r)
	}
	if after := snapshot(t, s.DB()); after == before {
		t.Errorf("the daemon's commit of a claim changed nothing in the guarded tables")
	}
	if r := w.Run("events", "--task", "hive"); r.Code != 0 || !strings.Contains(r.Stdout, "a2") {
		t.Errorf("events after: %v", r)
	}
}
