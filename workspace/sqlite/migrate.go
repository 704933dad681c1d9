package sqlite

import (
	"context"
	"embed"
	"fmt"

	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/tables"
)

// Migrations (migrations/NNNN_name.sql, embedded) make the database's
// tables, and schema_migrations records those applied: Init runs each
// missing one with its record in a BEGIN IMMEDIATE transaction of its
// own, which keeps two inits from racing.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int { return tables.Newest(migrationFiles) }

// version is the database's applied version: 0 when no workspace was
// initialized in it.
func version(ctx context.Context, q querier) (int, error) {
	var exists int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&exists); err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}

// checkVersion refuses a database without a workspace, and one newer
// than the binary.
func (s *Store) checkVersion(ctx context.Context) error {
	v, err := version(ctx, s.rdb)
	if err != nil {
		return err
	}
	return s.judgeVersion(v)
}

func (s *Store) judgeVersion(v int) error {
	return sqlstore.Schema{Op: "open " + s.path, InitHint: "create it with workspaced --root 'sqlite:" + s.path + "' init",
		NotInitialized: ErrNotInitialized, TooNew: ErrSchemaTooNew}.Judge(v, SchemaVersion())
}

func (s *Store) migrate(ctx context.Context) (int, error) {
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		return 0, err
	}
	// A database already up to date, as at every open of a workspace by
	// Init after its first, needs no write: the version read on the read
	// pool says so without taking the write lock, syncing the log or
	// opening the write connection. Versions only grow, and a migration
	// still to apply is applied under the write lock below.
	v, err := version(ctx, s.rdb)
	if err != nil {
		return 0, err
	}
	if v >= len(ms) {
		return 0, s.judgeVersion(v)
	}
	applied := 0
	for {
		done := false
		err := s.write(ctx, func(tx wtx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version INTEGER PRIMARY KEY, name TEXT NOT NULL,
				applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			v, err := version(ctx, tx)
			if err != nil {
				return err
			}
			if v > len(ms) {
				return s.judgeVersion(v)
			}
			if v == len(ms) {
				done = true
				return nil
			}
			m := ms[v]
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return applied, err
		}
		if done {
			return applied, nil
		}
		applied++
	}
}

// Init makes the database at root a workspace: the file is created when
// missing and each migration it lacks applied, so running it again
// changes nothing (a database migrated by a newer binary is left as it
// is, ErrSchemaTooNew). It returns the store, open, with the number of
// migrations applied.
func Init(ctx context.Context, root string) (*Store, int, error) {
	p, err := ParsePath(root)
	if err != nil {
		return nil, 0, err
	}
	s, err := connect(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	return sqlstore.Migrated(ctx, s, s.Store, s.migrate)
}
