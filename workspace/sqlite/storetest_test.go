package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// newStore initializes a workspace in a fresh database file.
func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	root := "sqlite:" + filepath.Join(t.TempDir(), "agents.db")
	s, _, err := Init(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, root
}

// TestConformance runs the suite every store passes against a fresh
// SQLite workspace for each part, served by the real daemon.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) workspace.Served {
		s, _ := newStore(t)
		return s
	})
}
