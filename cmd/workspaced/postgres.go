package main

import (
	"context"
	"fmt"

	"github.com/workspaced/workspaced/workspace/postgres"
)

// A root that is a postgres:// or postgresql:// URL selects the
// PostgreSQL backend (workspace/postgres).

// initPostgres creates the workspace's schema (the migrations not yet
// applied) and, when asked, the agent and daemon roles; with printGrants
// it only prints the GRANT statements for those roles.
func initPostgres(ctx context.Context, e *env, agentRole, daemonRole string, printGrants bool) error {
	_, schema, err := postgres.ParseURL(e.root)
	if err != nil {
		return err
	}
	if printGrants {
		for _, g := range postgres.Grants(schema, agentRole, daemonRole) {
			fmt.Fprintln(e.stdout, g+";")
		}
		return nil
	}
	s, n, err := postgres.Init(ctx, e.root)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(e.stdout, "workspace ready in schema %s (schema version %d, %d migrations applied)\n", schema, postgres.SchemaVersion(), n)
	if agentRole != "" {
		if err := s.CreateRoles(ctx, agentRole, "", daemonRole, ""); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "roles: %s (agents: markers, entries, products, threads, events), %s (the daemon: everything)\n", agentRole, daemonRole)
	}
	return nil
}
