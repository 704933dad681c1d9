package pgtest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Commits is the count of transactions committed in the database of
// root (a URL of DB's) once no connection to it is left and the count
// has stood still for 300 ms: a connection leaves pg_stat_activity just
// before it reports its last counts. It reads them from the cluster's
// own database, so that reading counts nothing in root's. A test counts
// the round trips of what it does between two calls, each store it
// opened closed by then.
func Commits(t testing.TB, ctx context.Context, root string) int64 {
	t.Helper()
	u, err := url.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	admin, err := Shared(t).Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var (
		last, n = int64(-1), int64(0)
		left    int
		since   = time.Now()
	)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		err := admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = $1),
			(SELECT xact_commit FROM pg_stat_database WHERE datname = $1)`, db).Scan(&left, &n)
		if err != nil {
			t.Fatal(err)
		}
		if left > 0 || n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > 300*time.Millisecond {
			return n
		}
	}
	t.Fatalf("database %s: %d connections left after a minute, or its commits still counting", db, left)
	return 0
}
