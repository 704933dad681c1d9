package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/storetest"
	"github.com/workspaced/workspaced/workspace/tables"
	sqlite3 "modernc.org/sqlite"
)

// agentConnector opens connections as another program would: a driver of
// its own, without the collation this package registers.
type agentConnector struct{ dsn string }

func (c agentConnector) Connect(context.Context) (driver.Conn, error) {
	return (&sqlite3.Driver{}).Open(c.dsn)
}
func (c agentConnector) Driver() driver.Driver { return &sqlite3.Driver{} }

// guarded initializes a workspace with a task t1 and one row in each
// guarded table, written through the store's own connection.
func guarded(t testing.TB) (*Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	s, _, err := Init(ctx, "sqlite:"+filepath.Join(t.TempDir(), "ws.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, q := range []string{
		`INSERT INTO tasks (id, created_at, doc) VALUES ('t1', '2026-01-01T00:00:00.000Z', '{}')`,
		`INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 1, '{}', 0)`,
		`INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', 1, 'x', '.claim.a', '{}', 0)`,
		`INSERT INTO backups (task_id, journal_seq, doc) VALUES ('t1', 0, '{}')`,
		`INSERT INTO events (task_id, time, line) VALUES ('t1', 'x', '{}')`,
	} {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatalf("the store's own connection: %s: %v", q, err)
		}
	}
	agent := sql.OpenDB(agentConnector{dsn(s.Path(), "immediate", "FULL")})
	t.Cleanup(func() { agent.Close() })
	return s, agent
}

// TestGuard: a connection without the writer's collation is refused every
// INSERT, UPDATE and DELETE of the daemon's tables with a message naming
// the table, and changes nothing; it still inserts markers and products,
// and the store's connections still write the guarded tables.
func TestGuard(t *testing.T) {
	t.Parallel()
	s, agent := guarded(t)
	writes := map[string][]string{
		"states": {`INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t2', 1, '{}', 0)`,
			`UPDATE states SET doc = '{"status":"completed"}'`, `DELETE FROM states`},
		"journal": {`INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', 2, 'x', '.done.a', '{}', 0)`,
			`UPDATE journal SET record = '{}'`, `UPDATE journal SET verdict = '{}'`, `DELETE FROM journal`},
		"backups": {`INSERT INTO backups (task_id, journal_seq, doc) VALUES ('t1', 0, '{}')`,
			`UPDATE backups SET doc = '{}'`, `DELETE FROM backups`},
		"events": {`INSERT INTO events (task_id, time, line) VALUES ('t1', 'x', '{}')`,
			`UPDATE events SET line = '{}'`, `DELETE FROM events`},
		// The table both views read (migration 0008).
		"state_history": {`INSERT INTO state_history (task_id, journal_seq, doc) VALUES ('t1', 2, '{}')`,
			`UPDATE state_history SET doc = '{}'`, `DELETE FROM state_history`},
		"schema_migrations": {`INSERT INTO schema_migrations (version, name) VALUES (99, 'x')`,
			`UPDATE schema_migrations SET name = 'x'`, `DELETE FROM schema_migrations`},
		// A task's rows cascade to its state, journal, backups: deleting
		// it is refused too.
		"tasks": {`DELETE FROM tasks WHERE id = 't1'`},
	}
	count := func(table string) (n int) {
		t.Helper()
		if err := s.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for table, stmts := range writes {
		want := "workspaced: only the workspaced daemon writes " + table
		if table == "tasks" {
			want = "workspaced: only the workspaced daemon writes "
		} else if table == "schema_migrations" {
			want = "workspaced: only workspaced writes schema_migrations"
		} else if table == "state_history" {
			want = "workspaced: only the workspaced daemon writes states"
		}
		before := count(table)
		for _, q := range stmts {
			_, err := agent.Exec(q)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("agent: %s: %v, want the guard's message about %s", q, err, table)
			}
		}
		if after := count(table); after != before {
			t.Errorf("%s: %d rows after the refused writes, %d before", table, after, before)
		}
	}
	for _, q := range []string{
		`INSERT INTO markers (task_id, kind, name, body) VALUES ('t1', 'claim', '.claim.b', '{}')`,
		`INSERT INTO products (task_id, path, body) VALUES ('t1', 'outputs/s1.json', '{}')`,
	} {
		if _, err := agent.Exec(q); err != nil {
			t.Errorf("agent: %s: %v", q, err)
		}
	}
	for _, q := range []string{`UPDATE states SET doc = '{"ok":1}'`, `DELETE FROM events`, `DELETE FROM tasks`} {
		if _, err := s.DB().Exec(q); err != nil {
			t.Errorf("the store's own connection: %s: %v", q, err)
		}
	}
}

// BenchmarkGuard is what the guard costs the daemon: 1000 event rows
// inserted and deleted in one transaction on the store's connection,
// with the triggers and without them (ns/row).
func BenchmarkGuard(b *testing.B) {
	const rows = 1000
	for _, guard := range []bool{true, false} {
		name := map[bool]string{true: "guarded", false: "unguarded"}[guard]
		b.Run(name, func(b *testing.B) {
			s, _ := guarded(b)
			if !guard {
				for _, op := range []string{"insert", "delete"} {
					if _, err := s.DB().Exec("DROP TRIGGER events_guard_" + op); err != nil {
						b.Fatal(err)
					}
				}
			}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				err := s.write(ctx, func(tx wtx) error {
					if _, err := tx.Exec(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
						INSERT INTO events (task_id, time, line) SELECT 't1', 'x', '{}' FROM n`, rows); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `DELETE FROM events WHERE id > 1`)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*2), "ns/row")
		})
	}
}

// TestGuardMigratesOlderDatabase: init on a database of schema version 1
// (as a workspaced before the guard made it) applies the migrations
// after it, and the guard then holds.
func TestGuardMigratesOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ws.db")
	agent := sql.OpenDB(agentConnector{dsn(path, "immediate", "FULL")})
	defer agent.Close()
	for _, q := range []string{ms[0].SQL,
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
			applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`,
		`INSERT INTO schema_migrations (version, name) VALUES (1, 'init')`,
		`INSERT INTO tasks (id, created_at, doc) VALUES ('t1', '2026-01-01T00:00:00.000Z', '{}')`,
		`INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 1, '{}', 0)`,
	} {
		if _, err := agent.Exec(q); err != nil {
			t.Fatalf("version 1, unguarded: %v", err)
		}
	}
	s, n, err := Init(ctx, "sqlite:"+path)
	if err != nil || n != SchemaVersion()-1 {
		t.Fatalf("init of version 1: %d migrations applied, %v; want %d", n, err, SchemaVersion()-1)
	}
	defer s.Close()
	if _, err := agent.Exec("UPDATE states SET doc = '{\"status\":\"completed\"}'"); err == nil || !strings.Contains(err.Error(), "only the workspaced daemon writes states") {
		t.Fatalf("after init: %v, want the guard's refusal", err)
	}
	if _, err := s.DB().Exec("UPDATE states SET doc = '{}'"); err != nil {
		t.Fatalf("the store's connection after init: %v", err)
	}
}

// TestSQLEntryWritesMakeEvents: entries an agent writes with its own
// connection (without the writer's collation, as Python's sqlite3 or the
// sqlite3 shell) make their events, once each, in order.
func TestSQLEntryWritesMakeEvents(t *testing.T) {
	t.Parallel()
	s, agent := guarded(t)
	storetest.SQLEntryWrites(t, s, func(ctx context.Context, q string) error {
		_, err := agent.ExecContext(ctx, q)
		return err
	}, "sql")
}
