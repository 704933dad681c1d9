package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore/sqlstoretest"
	"github.com/workspaced/workspaced/workspace/tables"
)

// newParts is a fresh store as the state parts' tests reach it
// (sqlstoretest.Parts), with PostgreSQL's check of the parts kept, and
// the root it was opened with.
func newParts(t *testing.T) (*Store, string, sqlstoretest.Parts) {
	t.Helper()
	s, root := newStore(t)
	db := driver{s}.Reads()
	return s, root, sqlstoretest.Parts{
		Store:     s,
		DB:        db,
		PartsFrom: dialect.StatePartsFrom,
		// No part is held by no row, none not held by the state row is
		// unmarked as replaced, and none is marked replaced before a row
		// that holds it (retention would take it from that row).
		Settled: func(ctx context.Context, _ string) error {
			var orphans, unmarked, early int
			if err := db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM state_parts p WHERE NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))
			AND NOT EXISTS (SELECT 1 FROM backup_rows b WHERE p.id = ANY (b.parts))),
		(SELECT count(*) FROM state_parts p WHERE replaced_at IS NULL AND NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))),
		(SELECT count(*) FROM state_parts p WHERE replaced_at IS NOT NULL AND (EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))
			OR EXISTS (SELECT 1 FROM backup_rows b WHERE b.n > p.replaced_at AND p.id = ANY (b.parts))))`).Scan(&orphans, &unmarked, &early); err != nil {
				return err
			}
			if orphans != 0 || unmarked != 0 || early != 0 {
				return fmt.Errorf("%d parts held by no row, %d not held by the state and not marked replaced, %d marked replaced before a row holding them",
					orphans, unmarked, early)
			}
			return nil
		},
		StateWhole:  "SELECT parts IS NULL FROM state_rows WHERE task_id = $1",
		BackupWhole: "SELECT doc IS NOT NULL FROM backup_rows WHERE task_id = $1 ORDER BY n DESC LIMIT 1",
	}
}

// TestStateParts runs the state parts' tests every driver runs
// (sqlstoretest), each on a fresh store of PostgreSQL's.
func TestStateParts(t *testing.T) {
	sqlstoretest.RunParts(t, func(t *testing.T) sqlstoretest.Parts {
		_, _, p := newParts(t)
		return p
	})
}

// A state or backup written by hand through the views (as the owner may)
// is a whole row: it reads back as written, the parts it held are
// settled, and the committer reads the document again and goes on.
func TestStatePartsWrittenThroughTheViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root, p := newParts(t)
	task := sqlstoretest.NewTask(t, p, 600)
	task.ClaimAndCommitN(workspace.DefaultBackupsKeep + 1)
	// The owner's client, its search_path its own: the views' triggers
	// write the tables of the views' schema.
	own := connectAs(t, root, "")
	sc := pgx.Identifier{s.Schema()}.Sanitize()
	// A backup's name set keeps its parts; the state's doc set is
	// written whole.
	var n, seq int64
	if err := s.pool.QueryRow(ctx, "SELECT n, journal_seq FROM backups WHERE task_id = $1 ORDER BY n DESC LIMIT 1", task.ID).Scan(&n, &seq); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Exec(ctx, "UPDATE "+sc+".backups SET name = 'kept' WHERE n = $1", n); err != nil {
		t.Fatal(err)
	}
	var parts bool
	if err := s.pool.QueryRow(ctx, "SELECT parts IS NOT NULL FROM backup_rows WHERE n = $1", n).Scan(&parts); err != nil || !parts {
		t.Fatalf("a backup whose name was set lost its parts (%v)", err)
	}
	if _, err := own.Exec(ctx, "UPDATE "+sc+".states SET doc = doc || ' ' WHERE task_id = $1", task.ID); err != nil {
		t.Fatal(err)
	}
	var doc string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = $1", task.ID).Scan(&doc); err != nil || doc != task.Wrote[int64(task.Claims)+2]+" " {
		t.Fatalf("the state written by hand reads %d bytes (%v)", len(doc), err)
	}
	task.ClaimAndCommitN(workspace.DefaultBackupsKeep + 2)
	task.CheckKept()
	// A backup deleted by hand takes the parts only it held.
	if _, err := own.Exec(ctx, "DELETE FROM "+sc+".backups WHERE task_id = $1", task.ID); err != nil {
		t.Fatal(err)
	}
	var orphans, total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM state_rows s WHERE p.id = ANY (s.parts))), count(*)
		FROM state_parts p`).Scan(&orphans, &total); err != nil || orphans != 0 || total == 0 {
		t.Fatalf("after the backups' deletion %d parts of %d held by no row (%v)", orphans, total, err)
	}
}

// connectAs connects to the store's database as role (one
// Store.CreateRoles made), or as the store's owner when role is "";
// the connection's search_path is its own, not the store's schema.
func connectAs(t *testing.T, root, role string) *pgx.Conn {
	t.Helper()
	conn, _, err := ParseURL(root)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	if role != "" {
		u.User = url.User(role)
	}
	c, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// mustBeRefused checks that each statement is refused to conn for want
// of the privilege.
func mustBeRefused(t *testing.T, conn *pgx.Conn, role string, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		_, err := conn.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" { // insufficient_privilege
			t.Errorf("%s: %s: %v, want permission denied", role, q, err)
		}
	}
}

// An agent reads the states and backups views with its own client and
// role: the documents assembled from parts read as they were written,
// while the tables of rows and parts stay closed to its writes, and the
// parts to its reads.
func TestStatePartsReadByTheAgentRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root, p := newParts(t)
	task := sqlstoretest.NewTask(t, p, 600)
	task.ClaimAndCommitN(workspace.DefaultBackupsKeep + 2)
	agent, daemon := "agent_parts_read", "daemon_parts_read"
	if err := s.CreateRoles(ctx, agent, "", daemon, ""); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, root, agent)
	sc := pgx.Identifier{s.Schema()}.Sanitize()
	rows, err := conn.Query(ctx, "SELECT journal_seq, doc FROM "+sc+".backups WHERE task_id = 't1' UNION ALL SELECT journal_seq, doc FROM "+sc+".states WHERE task_id = 't1'")
	if err != nil {
		t.Fatal(err)
	}
	n := task.ReadBack(rows, "the agent role")
	if n != workspace.DefaultBackupsKeep+1 {
		t.Fatalf("the agent role read %d rows, want the state and %d backups", n, workspace.DefaultBackupsKeep)
	}
	mustBeRefused(t, conn, agent,
		"SELECT count(*) FROM "+sc+".state_parts",
		"UPDATE "+sc+".state_parts SET body = ''",
		"INSERT INTO "+sc+".state_parts (task_id, body) VALUES ('t1', '')",
		"DELETE FROM "+sc+".state_parts",
		"SELECT count(*) FROM "+sc+".state_rows",
		"UPDATE "+sc+".state_rows SET doc = '{}'",
		"DELETE FROM "+sc+".backup_rows",
		"INSERT INTO "+sc+".states (task_id, journal_seq, doc, epoch) VALUES ('t1', 0, '{}', 0)",
		"UPDATE "+sc+".states SET doc = '{}'",
		"DELETE FROM "+sc+".states",
		"UPDATE "+sc+".backups SET doc = '{}'",
		"DELETE FROM "+sc+".backups",
		"SELECT "+sc+".state_parts_settle('"+s.Schema()+"', 't1')",
	)
}

// A schema of the version before the parts, with roles granted then,
// migrates without a row rewritten: its states and backups read as they
// were, by the agent role too, which may write none of the new tables,
// while the daemon role may write them all.
func TestStatePartsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := withSchema(t, pgtest.Shared(t).DB(t), "before_parts")
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, root, "")
	applied := 0
	stmts := []string{"CREATE SCHEMA before_parts", "SET search_path = before_parts",
		"CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"}
	for _, m := range ms {
		if m.Name == "state_parts" {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
		applied++
	}
	agent, daemon := "agent_parts_migration", "daemon_parts_migration"
	for _, r := range []string{agent, daemon} {
		stmts = append(stmts, "DO $$ BEGIN CREATE ROLE "+r+" LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	}
	stmts = append(stmts, Grants("before_parts", agent, daemon)...)
	big := `{"big":"` + strings.Repeat("x", 100000) + `"}`
	stmts = append(stmts, `INSERT INTO tasks (id, created_at, doc) VALUES ('t1', now(), '{}')`,
		"INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 3, '"+big+"', 0)",
		`INSERT INTO backups (task_id, journal_seq, doc, name) VALUES ('t1', 2, '{"b":2}', 'two')`)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	var before string
	if err := conn.QueryRow(ctx, "SELECT ctid::text FROM states").Scan(&before); err != nil {
		t.Fatal(err)
	}
	s, n, err := Init(ctx, root)
	if err != nil || n != len(ms)-applied {
		t.Fatalf("Init of the schema before the parts: %d migrations applied, %v", n, err)
	}
	defer s.Close()
	var after string
	if err := conn.QueryRow(ctx, "SELECT ctid::text FROM state_rows").Scan(&after); err != nil || after != before {
		t.Fatalf("the state row moved from %s to %s (%v): rewritten", before, after, err)
	}
	ac := connectAs(t, root, agent)
	var doc, bdoc, name string
	if err := ac.QueryRow(ctx, "SELECT s.doc, b.doc, b.name FROM before_parts.states s JOIN before_parts.backups b USING (task_id)").Scan(&doc, &bdoc, &name); err != nil ||
		doc != big || bdoc != `{"b":2}` || name != "two" {
		t.Fatalf("the agent role reads %d bytes, %q, %q (%v)", len(doc), bdoc, name, err)
	}
	mustBeRefused(t, ac, agent,
		"SELECT count(*) FROM before_parts.state_parts",
		"INSERT INTO before_parts.state_parts (task_id, body) VALUES ('t1', '')",
		"UPDATE before_parts.state_rows SET doc = '{}'",
		"DELETE FROM before_parts.backup_rows",
		"UPDATE before_parts.states SET doc = '{}'",
		"DELETE FROM before_parts.backups",
	)
	for _, q := range []string{
		"SELECT has_table_privilege($1, 'before_parts.state_parts', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.state_rows', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.backup_rows', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_table_privilege($1, 'before_parts.states', 'SELECT, INSERT, UPDATE, DELETE')",
		"SELECT has_sequence_privilege($1, pg_get_serial_sequence('before_parts.state_parts', 'id'), 'USAGE')",
	} {
		var ok bool
		if err := conn.QueryRow(ctx, q, daemon).Scan(&ok); err != nil || !ok {
			t.Errorf("the daemon role: %s: %v, %v", q, ok, err)
		}
	}
}

// A read of the states or backups views that does not name doc (the
// wake-ups', a verdict's, a lock's look-up) does not join the parts: the
// planner removes the LATERAL join, which yields one row.
func TestStatePartsNotJoinedWithoutDoc(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	for _, q := range []string{
		"SELECT version, epoch, journal_seq FROM states WHERE task_id = 't1'",
		"SELECT t.id FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM states s WHERE s.task_id = t.id)",
		"SELECT n, name FROM backups WHERE task_id = 't1'",
		"SELECT doc FROM states WHERE task_id = 't1'",
	} {
		rows, err := s.pool.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Contains(strings.Join(plan, "\n"), "state_parts")
		if want := strings.Contains(q, "doc"); joined != want {
			t.Errorf("%s: the plan joins state_parts: %v, want %v\n%s", q, joined, want, strings.Join(plan, "\n"))
		}
	}
}
