package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Least privilege, enforced by the database: the agent role may insert
// markers and read and write entries, products, threads and events, and
// only read the daemon's tables; the daemon role writes everything.

// agentWrites are the tables an agent reads and writes.
var agentWrites = []string{"entries", "products", "threads", "events", "tasks", "friction", "locks", "memory_items", "memory_events"}

// agentReads are the tables an agent only reads: the daemon's.
var agentReads = []string{"states", "journal", "backups", "lease", "files", "schema_migrations", "entry_history"}

// Grants are the statements that give role agent an agent's rights and
// role daemon the daemon's in schema (the roles must exist). They are
// what `workspaced init --print-grants` prints.
func Grants(schema, agent, daemon string) []string {
	sc := pgx.Identifier{schema}.Sanitize()
	a, d := pgx.Identifier{agent}.Sanitize(), pgx.Identifier{daemon}.Sanitize()
	q := func(t string) string { return sc + "." + pgx.Identifier{t}.Sanitize() }
	var out []string
	out = append(out,
		"GRANT USAGE ON SCHEMA "+sc+" TO "+a+", "+d,
		// The daemon: every table of the schema, now and after migrations.
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+sc+" TO "+d,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "+sc+" TO "+d,
		// Agents: insert markers (and see their own, waiting).
		"GRANT SELECT, INSERT ON "+q("markers")+" TO "+a,
	)
	for _, t := range agentWrites {
		out = append(out, "GRANT SELECT, INSERT, UPDATE, DELETE ON "+q(t)+" TO "+a)
	}
	for _, t := range agentReads {
		out = append(out, "GRANT SELECT ON "+q(t)+" TO "+a)
	}
	out = append(out, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "+sc+" TO "+a)
	return out
}

// CreateRoles creates the login roles agent and daemon when they do not
// exist (with the passwords given, none when empty) and grants them their
// rights in the store's schema. The connecting role must be allowed to
// create roles.
func (s *Store) CreateRoles(ctx context.Context, agent, agentPassword, daemon, daemonPassword string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, r := range []struct{ name, password string }{{agent, agentPassword}, {daemon, daemonPassword}} {
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", r.name).Scan(&exists); err != nil {
				return err
			}
			id := pgx.Identifier{r.name}.Sanitize()
			if !exists {
				if _, err := tx.Exec(ctx, "CREATE ROLE "+id+" LOGIN"); err != nil {
					return fmt.Errorf("create role %s: %w", r.name, err)
				}
			}
			if r.password != "" {
				// PASSWORD takes no parameter: quote it as a literal.
				lit, err := quoteLiteral(ctx, tx, r.password)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "ALTER ROLE "+id+" PASSWORD "+lit); err != nil {
					return fmt.Errorf("set the password of role %s: %w", r.name, err)
				}
			}
		}
		for _, g := range Grants(s.schema, agent, daemon) {
			if _, err := tx.Exec(ctx, g); err != nil {
				return fmt.Errorf("%s: %w", g, err)
			}
		}
		return nil
	})
}

// quoteLiteral quotes v as an SQL string literal, by the server's own
// quote_literal.
func quoteLiteral(ctx context.Context, tx pgx.Tx, v string) (string, error) {
	var lit string
	err := tx.QueryRow(ctx, "SELECT quote_literal($1::text)", v).Scan(&lit)
	return lit, err
}
