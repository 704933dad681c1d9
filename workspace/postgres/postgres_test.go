package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// withSchema is db's URL with ?schema=name.
func withSchema(t testing.TB, db, name string) string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// newStore initializes a workspace in a fresh schema: a copy of one
// migrated once per test binary (pgtest.Migrated), which Init finds up to
// date. The tests of Init itself start from an empty schema.
func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	root := pgtest.Migrated(t, migrate)
	s, n, err := Init(context.Background(), root)
	if err == nil && n != 0 {
		err = fmt.Errorf("Init applied %d migrations to a migrated schema", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, root
}

// migrate is the workspace's init of root, for pgtest.Migrated.
func migrate(ctx context.Context, root string) error {
	s, _, err := Init(ctx, root)
	if err != nil {
		return err
	}
	return s.Close()
}

func TestInitMigratesOnceAndOpenChecksVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgtest.Schema(t)
	if _, err := Open(ctx, root); !errors.Is(err, ErrNotInitialized) || workspace.HintOf(err) == "" {
		t.Fatalf("Open before init: %v, want ErrNotInitialized with a hint", err)
	}
	s, n, err := Init(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n != SchemaVersion() || n < 1 {
		t.Fatalf("first init applied %d migrations, want %d", n, SchemaVersion())
	}
	s2, n, err := Init(ctx, root)
	if err != nil || n != 0 {
		t.Fatalf("second init: %d migrations, %v; want 0, nil", n, err)
	}
	s2.Close()
	// Another schema of the same database is another workspace.
	if _, err := Open(ctx, pgtest.Schema(t)); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Open of another schema: %v, want ErrNotInitialized", err)
	}
	// A newer binary migrated it: every Open refuses, and so does Init.
	if _, err := s.pool.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, root); !errors.Is(err, ErrSchemaTooNew) || workspace.HintOf(err) == "" {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew with a hint", err)
	}
	if _, _, err := Init(ctx, root); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Init of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, conn, schema string
		bad              bool
	}{
		{in: "postgres://u@h/db", conn: "postgres://u@h/db", schema: DefaultSchema},
		{in: "postgresql://u@h/db?schema=team_a&sslmode=disable", conn: "postgresql://u@h/db?sslmode=disable", schema: "team_a"},
		{in: "postgres://u@h/db?schema=a%22%3B+DROP+TABLE+x", bad: true},
		{in: "postgres://u@h/db?schema=Upper", bad: true},
		{in: "/srv/ws", bad: true},
	} {
		conn, schema, err := ParseURL(tc.in)
		if tc.bad {
			if !errors.Is(err, workspace.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", tc.in, err)
			}
			continue
		}
		if err != nil || conn != tc.conn || schema != tc.schema {
			t.Errorf("%s: %q %q %v, want %q %q", tc.in, conn, schema, err, tc.conn, tc.schema)
		}
	}
}

// TestAgentRoleCannotWriteState: the agent role's UPDATE of a state, or
// insert into the journal, is refused by PostgreSQL itself, while its
// marker insert goes through.
func TestAgentRoleCannotWriteState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := c.DB(t)
	s, _, err := Init(ctx, withSchema(t, db, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	agent, daemon := "agent_"+t.Name()[4:14], "daemon_"+t.Name()[4:14]
	if err := s.CreateRoles(ctx, agent, "", daemon, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO tasks (id, created_at, doc) VALUES ('t1', now(), '{}');
		INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t1', 0, '{}', 0)`); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(db)
	u.User = url.User(agent)
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO ws.markers (task_id, kind, body) VALUES ('t1', 'claim', '{}')"); err != nil {
		t.Fatalf("agent inserts a marker: %v", err)
	}
	for _, q := range []string{
		"UPDATE ws.states SET doc = '{\"hacked\":true}'",
		"INSERT INTO ws.journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', 1, now(), 'x', '{}', 0)",
		"UPDATE ws.journal SET verdict = '{}'", // the excerpt a verdict is read from
		"DELETE FROM ws.backups",
		"UPDATE ws.lease SET epoch = epoch + 1",
		// The agents' tokens are the daemon's (or the owner's) alone.
		"SELECT count(*) FROM ws.tokens",
		"INSERT INTO ws.tokens (sha256, n, doc) VALUES (repeat('a', 64), 1, '{}')",
		"DELETE FROM ws.tokens",
	} {
		_, err := conn.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" { // insufficient_privilege
			t.Errorf("agent: %s: %v, want permission denied", q, err)
		}
	}
	var doc string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&doc); err != nil || doc != "{}" {
		t.Fatalf("state after the agent's attempts: %q, %v", doc, err)
	}
}
