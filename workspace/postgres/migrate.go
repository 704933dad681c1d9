package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workspaced/workspaced/workspace/sqlstore"
	"github.com/workspaced/workspaced/workspace/tables"
)

// Migrations (migrations/NNNN_name.sql, embedded) make the schema; the
// table schema_migrations records those applied. Init takes an advisory
// lock, so that two inits do not race, and applies each missing one in a
// transaction of its own with its record.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int { return tables.Newest(migrationFiles) }

// lockMigrations is the advisory lock key inits take (any constant
// distinct from the lock keys of named locks, which are hashed names).
const lockMigrations = 0x77737064 // "wspd"

// version is the schema's applied version: 0 when no workspace was
// initialized in it.
func (s *Store) version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table or schema
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}

// checkVersion refuses a schema without a workspace, and one newer than
// the binary.
func (s *Store) checkVersion(ctx context.Context) error {
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.judgeVersion(v)
}

func (s *Store) judgeVersion(v int) error {
	return sqlstore.Schema{Op: "open schema " + s.schema, InitHint: "create it with workspaced --root '<the same URL>' init",
		NotInitialized: ErrNotInitialized, TooNew: ErrSchemaTooNew}.Judge(v, SchemaVersion())
}

// Init creates the workspace at root: the schema when missing and every
// migration not yet applied. It is idempotent; on a schema newer than the
// binary it changes nothing and returns ErrSchemaTooNew. It returns the
// store, open, and how many migrations it applied.
func Init(ctx context.Context, root string) (*Store, int, error) {
	s, err := connect(ctx, root)
	if err != nil {
		return nil, 0, err
	}
	return sqlstore.Migrated(ctx, s, s.Store, s.migrate)
}

func (s *Store) migrate(ctx context.Context) (int, error) {
	ms, err := tables.Migrations(migrationFiles)
	if err != nil {
		return 0, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockMigrations); err != nil {
		return 0, fmt.Errorf("lock the schema for migration: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockMigrations) }()
	ident := pgx.Identifier{s.schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return 0, fmt.Errorf("create schema %s: %w", s.schema, err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	v, err := s.version(ctx, conn)
	if err != nil {
		return 0, err
	}
	if v > len(ms) {
		return 0, s.judgeVersion(v)
	}
	applied := 0
	for _, m := range ms[v:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		applied++
	}
	return applied, nil
}
