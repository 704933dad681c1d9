package api

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// kinds are the stores every route is tried on.
var kinds = []struct {
	name string
	kind service.Kind
}{
	{"files", service.Files},
	{"sqlite", service.SQLite},
	{"postgres", service.PostgreSQL},
}

// openKind opens a new workspace of kind for t: a directory, a sqlite:
// file, or a PostgreSQL schema of its own. It is closed when t ends.
func openKind(t testing.TB, kind service.Kind) workspace.Store {
	t.Helper()
	st, _ := openKindAt(t, kind)
	return st
}

// openKindAt is openKind, and the root the store was opened from.
func openKindAt(t testing.TB, kind service.Kind) (workspace.Store, string) {
	t.Helper()
	var root string
	switch kind {
	case service.Files:
		root = filepath.Join(t.TempDir(), "ws")
	case service.SQLite:
		root = "sqlite:" + filepath.Join(t.TempDir(), "ws.db")
	case service.PostgreSQL:
		root = pgtest.Migrated(t, func(ctx context.Context, root string) error {
			_, err := service.Init(ctx, root, service.Roles{})
			return err
		})
	}
	ctx := context.Background()
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		t.Fatalf("init %s: %v", root, err)
	}
	st, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", root, err)
	}
	t.Cleanup(func() { st.Close() })
	return st, root
}

// quiet is the log of a test's handler: its refusals are the test's
// point, not noise for its output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTreeStore(t testing.TB) workspace.Store { return openKind(t, service.Files) }
