package pgtest

import (
	"context"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/internal/optdep"
	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDBIsolatedAndRestart: two tests' databases do not share tables, and
// what was committed before a restart is there after it.
func TestDBIsolatedAndRestart(t *testing.T) {
	ctx := context.Background()
	c := Shared(t)
	a, b := c.DB(t), c.DB(t)
	if a == b {
		t.Fatalf("two databases with one URL %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')"); err != nil {
		t.Fatal(err)
	}
	ca.Close(ctx)
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	cb.Close(ctx)
	if n != 0 {
		t.Fatalf("database b sees a's table")
	}
	if os.Getenv(EnvURL) != "" {
		t.Skip("the server of " + EnvURL + " is not restarted by the tests")
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	ca, err = pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	var v string
	if err := ca.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "before" {
		t.Fatalf("after restart: %q, %v", v, err)
	}
}

func TestDBName(t *testing.T) {
	for _, tc := range []string{"TestX", "TestX/sub case'; DROP", "Test" + string(make([]byte, 100))} {
		n := dbName(tc, 7)
		if len(n) > 63 {
			t.Errorf("%q: name %q longer than 63", tc, n)
		}
		for _, r := range n {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				t.Errorf("%q: name %q has %q", tc, n, r)
			}
		}
	}
}

// TestSchemaIsolatedAndDropped: two schemas of one test are two names in
// the one shared database, each a name a root URL takes; a schema made
// under a test's name is gone once the test has ended.
func TestSchemaIsolatedAndDropped(t *testing.T) {
	ctx := context.Background()
	a, b := Schema(t), Schema(t)
	ua, _ := url.Parse(a)
	ub, _ := url.Parse(b)
	sa, sb := ua.Query().Get("schema"), ub.Query().Get("schema")
	if ua.Path != ub.Path || sa == sb || sa == "" {
		t.Fatalf("schemas %s and %s: want two names in one database", a, b)
	}
	var made string
	t.Run("sub", func(t *testing.T) {
		root := Schema(t)
		u, _ := url.Parse(root)
		made = u.Query().Get("schema")
		conn, err := pgx.Connect(ctx, Shared(t).URL(strings.TrimPrefix(u.Path, "/")))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{made}.Sanitize()+"; CREATE TABLE "+pgx.Identifier{made, "kept"}.Sanitize()+" (v text)"); err != nil {
			t.Fatal(err)
		}
	})
	conn, err := pgx.Connect(ctx, Shared(t).URL(strings.TrimPrefix(ua.Path, "/")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", made).Scan(&n); err != nil || n != 0 {
		t.Fatalf("schema %s after its test: %d left, %v", made, n, err)
	}
}

func TestSchemaName(t *testing.T) {
	for _, tc := range []string{"TestX", "TestX/sub case'; DROP", "Test" + string(make([]byte, 100))} {
		n := schemaName(tc, 123456)
		if !regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`).MatchString(n) {
			t.Errorf("%q: name %q is not a schema a root URL takes", tc, n)
		}
	}
}

// TestNoFlushOutsideBenchmarks: the server the tests start does not flush
// at each commit; a benchmark run's does (the durable default).
func TestNoFlushOutsideBenchmarks(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("the server of " + EnvURL + " is configured by its owner")
	}
	conn, err := pgx.Connect(t.Context(), DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var fsync string
	if err := conn.QueryRow(t.Context(), "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if want := map[bool]string{true: "on", false: "off"}[benchmarking()]; fsync != want {
		t.Errorf("fsync = %s, want %s (benchmarking: %v)", fsync, want, benchmarking())
	}
}

// TestMigratedCopiesTheTemplate: migrate runs once for three schemas, each
// of which holds what it made (a table, its rows, a sequence past them, a
// trigger calling a function), apart from the others.
func TestMigratedCopiesTheTemplate(t *testing.T) {
	ctx := context.Background()
	c := Shared(t)
	if findTool("pg_dump") == "" {
		optdep.Skip(t, "postgres", "no pg_dump: each schema is migrated, and the template is not tested (install the postgresql package)")
	}
	calls := 0
	migrate := func(ctx context.Context, root string) error {
		calls++
		conn, err := pgx.Connect(ctx, dbOf(t, root))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		schema := pgx.Identifier{schemaOf(t, root)}.Sanitize()
		_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema+"; SET search_path = "+schema+`;
			CREATE TABLE notes (id bigserial PRIMARY KEY, v text NOT NULL, upper_v text);
			CREATE FUNCTION notes_upper() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN NEW.upper_v := upper(NEW.v); RETURN NEW; END $$;
			CREATE TRIGGER notes_upper BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION notes_upper();
			INSERT INTO notes (v) VALUES ('one'), ('two')`)
		return err
	}
	var roots []string
	for range 3 {
		roots = append(roots, c.Migrated(t, migrate))
	}
	if calls != 1 {
		t.Errorf("migrate ran %d times for 3 schemas, want once", calls)
	}
	for i, root := range roots {
		conn, err := pgx.Connect(ctx, dbOf(t, root))
		if err != nil {
			t.Fatal(err)
		}
		schema := pgx.Identifier{schemaOf(t, root)}.Sanitize()
		if _, err := conn.Exec(ctx, "INSERT INTO "+schema+".notes (v) VALUES ($1)", "mine "+root); err != nil {
			t.Fatal(err)
		}
		var n int
		var last, upper string
		var id int64
		if err := conn.QueryRow(ctx, "SELECT count(*), max(id), (array_agg(v ORDER BY id DESC))[1], (array_agg(upper_v ORDER BY id DESC))[1] FROM "+schema+".notes").Scan(&n, &id, &last, &upper); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if n != 3 || id != 3 || last != "mine "+root || upper != strings.ToUpper(last) {
			t.Errorf("schema %d: %d rows, last id %d, last %q (%q): want the template's two and its own, id 3, its trigger run", i, n, id, last, upper)
		}
	}
}

// dbOf is a root URL without its schema: the database's.
func dbOf(t *testing.T, root string) string {
	t.Helper()
	u, err := url.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String()
}

// schemaOf is the schema a root URL names.
func schemaOf(t *testing.T, root string) string {
	t.Helper()
	u, err := url.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("schema")
}
