package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
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
