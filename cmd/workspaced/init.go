package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const initUsage = `workspaced init — create a workspace (safe to run twice).

Usage:
  workspaced [--root DIR] init
  workspaced --root postgres://USER@HOST/DB[?schema=NAME] init
                   [--agent-role NAME --daemon-role NAME] [--print-grants]
  workspaced --root sqlite:PATH init

Creates the root (--root, else $WORKSPACE_ROOT, else ./workspace) with
workspace.json (every default written out), config/agents.json,
friction/friction.json, memory/, tasks/ and a .gitignore that keeps lock
files, temporary files and the daemon's lock out of git, so that
'git init && git add -A' in the root records the tree and nothing else.
Files that exist are left alone.

On a postgres:// (or postgresql://) root it creates the schema (?schema=,
default workspaced) by the embedded migrations not yet applied, recorded in
schema_migrations; a schema migrated by a newer workspaced is refused.
--agent-role and --daemon-role create those login roles (when missing) and
grant them their rights: agents insert markers and write entries,
products, threads and events; only the daemon writes state, journal and
backups. --print-grants prints the GRANT statements instead.

On a sqlite:PATH root (sqlite:./agents.db, sqlite:///var/lib/agents.db) it
creates the database file when missing and applies the migrations not yet
applied; a database migrated by a newer workspaced is refused.

Examples:
  workspaced init
  workspaced --root /srv/agents/ws init
  WORKSPACE_ROOT=$PWD/ws workspaced init
  workspaced --root 'postgres://admin@db/agents?schema=team_a' init --agent-role agent --daemon-role daemon
  workspaced --root sqlite:./agents.db init

Exit codes: 0 ok, 1 failure (e.g. the directory cannot be created, the
schema is newer than this workspaced), 2 usage.
`

func cmdInit(ctx context.Context, e *env, args []string) error {
	fs := newFlags("init")
	agentRole := fs.String("agent-role", "", "on a postgres:// root, create the agents' login role `NAME` and grant its rights")
	daemonRole := fs.String("daemon-role", "", "on a postgres:// root, create the daemon's login role `NAME` and grant its rights")
	printGrants := fs.Bool("print-grants", false, "print the GRANT statements for --agent-role and --daemon-role instead of running them")
	if err := parse(e, fs, initUsage, args); err != nil {
		return err
	}
	if (*agentRole == "") != (*daemonRole == "") || (*printGrants && *agentRole == "") {
		return usageHint("init", "--agent-role and --daemon-role go together (and --print-grants needs both)")
	}
	roles := service.Roles{Agent: *agentRole, Daemon: *daemonRole}
	kind := service.KindOf(e.root)
	if kind != service.PostgreSQL && *agentRole != "" {
		return usageHint("init", "roles are for a postgres:// root")
	}
	if kind == service.PostgreSQL && *printGrants {
		grants, err := service.Grants(e.root, roles)
		if err != nil {
			return err
		}
		for _, g := range grants {
			fmt.Fprintln(e.stdout, g+";")
		}
		return nil
	}
	made, err := service.Init(ctx, e.root, roles)
	switch kind {
	case service.PostgreSQL, service.SQLite:
		if made.Where != "" {
			fmt.Fprintf(e.stdout, "workspace ready in %s (schema version %d, %d migrations applied)\n", made.Where, made.SchemaVersion, made.Applied)
		}
		if err == nil && *agentRole != "" {
			fmt.Fprintf(e.stdout, "roles: %s (agents: markers, entries, products, threads, events), %s (the daemon: everything)\n", *agentRole, *daemonRole)
		}
		return err
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "workspace ready at %s\n\nNext:\n", made.Where)
	root := ""
	if e.root != workspace.DefaultRoot {
		root = "--root " + shellQuote(made.Where) + " "
	}
	fmt.Fprintf(e.stdout, "  workspaced %stask create --description \"what to do\"   # prints the task id\n", root)
	fmt.Fprintf(e.stdout, "  workspaced %sserve                                      # the daemon that keeps state.json\n", root)
	fmt.Fprintf(e.stdout, "  workspaced %senv store --task ID --key K --description D --value '{}'\n", root)
	return nil
}

// shellQuote quotes s for a shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
