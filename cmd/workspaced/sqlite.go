package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// A root sqlite:PATH selects the SQLite backend (workspace/sqlite): the
// workspace in one database file, for agents on one machine.

// isDatabase reports whether a root names a database (PostgreSQL or
// SQLite) rather than a directory.
func isDatabase(root string) bool { return postgres.IsURL(root) || sqlite.IsURL(root) }

// initSQLite creates the database file when missing and applies the
// migrations not yet applied.
func initSQLite(ctx context.Context, e *env) error {
	s, n, err := sqlite.Init(ctx, e.root)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(e.stdout, "workspace ready in %s (schema version %d, %d migrations applied)\n", s.Path(), sqlite.SchemaVersion(), n)
	return nil
}
