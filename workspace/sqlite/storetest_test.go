package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// migrated is a database file Init made, once per test binary: newStore
// starts each test from a copy of it rather than migrating a new file
// again (under -race, the migrations cost more CPU than most tests). The
// tests of Init itself start from nothing.
var migrated struct {
	once sync.Once
	path string
	err  error
}

// newStore initializes a workspace in a fresh database file: a copy of
// the migrated one, which Init finds up to date and opens.
func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	migrated.once.Do(func() {
		dir, err := os.MkdirTemp("", "workspaced-sqlite-migrated-")
		if err != nil {
			migrated.err = err
			return
		}
		p := filepath.Join(dir, "agents.db")
		s, _, err := Init(context.Background(), "sqlite:"+p)
		if err == nil {
			// The last connection closed checkpoints the log into the file
			// and removes it: the one file is the whole database.
			err = s.Close()
		}
		if _, serr := os.Stat(p + "-wal"); err == nil && serr == nil {
			err = fmt.Errorf("%s-wal is still there after the store closed", p)
		}
		migrated.path, migrated.err = p, err
	})
	if migrated.err != nil {
		t.Fatalf("the migrated database: %v", migrated.err)
	}
	b, err := os.ReadFile(migrated.path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "agents.db")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	root := "sqlite:" + p
	s, n, err := Init(context.Background(), root)
	if err == nil && n != 0 {
		err = fmt.Errorf("Init applied %d migrations to a migrated database", n)
	}
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
