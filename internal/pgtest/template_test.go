package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/internal/optdep"
)

// templateIn points the template at a directory of t's own, which the
// server's user can reach, and returns the path the template takes
// there.
func templateIn(t *testing.T) string {
	t.Helper()
	if os.Getenv(EnvURL) != "" {
		t.Skip("the server of " + EnvURL + " is not made by the tests")
	}
	bin := findBin()
	if bin == "" {
		optdep.Skip(t, "postgres", ErrNotInstalled.Error())
	}
	root, err := os.MkdirTemp("", "pgtest-templates-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	old := templateRoot
	templateRoot = root
	t.Cleanup(func() { templateRoot = old })
	cred, err := serverCred()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := templateDir(bin, cred)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// start starts a cluster, closed when t ends.
func start(t *testing.T) *Cluster {
	t.Helper()
	c, err := Start(context.Background())
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTemplateOnceForConcurrentClusters: clusters started at once, where
// a template is broken and a maker's temporary directory was left, run
// initdb once between them, and each is a cluster of its own; what was
// left over is gone and the template is whole.
func TestTemplateOnceForConcurrentClusters(t *testing.T) {
	tmpl := templateIn(t)
	if err := os.MkdirAll(filepath.Join(tmpl, "data", "base"), 0o700); err != nil { // no PG_VERSION, no pg_control
		t.Fatal(err)
	}
	left := tmpl + ".tmp-123"
	if err := os.MkdirAll(filepath.Join(left, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := initdbRuns.Load()
	var wg sync.WaitGroup
	cs := make([]*Cluster, 2)
	for i := range cs {
		wg.Go(func() { cs[i] = start(t) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := initdbRuns.Load() - before; n != 1 {
		t.Errorf("initdb ran %d times for %d clusters, want once", n, len(cs))
	}
	if !whole(tmpl) {
		t.Errorf("the template %s is not whole", tmpl)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory left by a maker is still there: %v", err)
	}
	ctx := context.Background()
	a, err := pgx.Connect(ctx, cs[0].URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (v text)"); err != nil {
		t.Fatal(err)
	}
	b, err := pgx.Connect(ctx, cs[1].URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the second cluster sees the first's table: %d, %v", n, err)
	}
}

// TestTemplateBrokenUnseen: a template that looks whole but from which
// the server does not start (its PG_VERSION another version's) is
// removed, and the cluster is made by initdb and starts.
func TestTemplateBrokenUnseen(t *testing.T) {
	tmpl := templateIn(t)
	if err := os.MkdirAll(filepath.Join(tmpl, "data", "global"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmpl, "data", "base"), 0o700); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string]string{"PG_VERSION": "9\n", "global/pg_control": "", "postgresql.conf": ""} {
		if err := os.WriteFile(filepath.Join(tmpl, "data", f), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !whole(tmpl) {
		t.Fatal("the broken template does not look whole: the test tests nothing")
	}
	before := initdbRuns.Load()
	c := start(t)
	if c == nil {
		t.FailNow()
	}
	if n := initdbRuns.Load() - before; n != 1 {
		t.Errorf("initdb ran %d times, want once", n)
	}
	if _, err := os.Stat(tmpl); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the broken template is still there: %v", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
}
