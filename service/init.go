package service

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Initialized is what Init made of a root.
type Initialized struct {
	// Where is the workspace made: the directory, "schema NAME" on
	// PostgreSQL, the SQLite database's file.
	Where string
	// SchemaVersion and Applied are a database's schema version and the
	// migrations this Init applied (zero on a directory).
	SchemaVersion, Applied int
}

// Roles are the PostgreSQL login roles Init creates and grants, both or
// neither.
type Roles struct{ Agent, Daemon string }

// Init creates the workspace at root when needed (safe to run twice): a
// directory's tree, the migrations a database has not yet applied and, on
// PostgreSQL, the roles asked for.
func Init(ctx context.Context, root string, roles Roles) (Initialized, error) {
	switch KindOf(root) {
	case PostgreSQL:
		_, schema, err := postgres.ParseURL(root)
		if err != nil {
			return Initialized{}, err
		}
		s, n, err := postgres.Init(ctx, root)
		if err != nil {
			return Initialized{}, err
		}
		defer s.Close()
		out := Initialized{Where: "schema " + schema, SchemaVersion: postgres.SchemaVersion(), Applied: n}
		if roles.Agent != "" {
			if err := s.CreateRoles(ctx, roles.Agent, "", roles.Daemon, ""); err != nil {
				return out, err
			}
		}
		return out, nil
	case SQLite:
		s, n, err := sqlite.Init(ctx, root)
		if err != nil {
			return Initialized{}, err
		}
		defer s.Close()
		return Initialized{Where: s.Path(), SchemaVersion: sqlite.SchemaVersion(), Applied: n}, nil
	}
	w, err := files.Init(root, workspace.Options{})
	if err != nil {
		return Initialized{}, err
	}
	defer w.Close()
	return Initialized{Where: w.Dir()}, nil
}

// Grants are the GRANT statements that give the PostgreSQL roles their
// rights in the schema of root.
func Grants(root string, roles Roles) ([]string, error) {
	_, schema, err := postgres.ParseURL(root)
	if err != nil {
		return nil, err
	}
	return postgres.Grants(schema, roles.Agent, roles.Daemon), nil
}
