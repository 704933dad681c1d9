package postgres

import "github.com/workspaced/workspaced/workspace"

var _ workspace.VerdictSource = (*Store)(nil)

// Serving reports whether a daemon holds the lease now.
func (s *Store) Serving() (bool, error) {
	ctx, cancel := s.readCtx()
	defer cancel()
	li, err := s.Lease(ctx)
	return li.Live, err
}

// Where names the workspace in messages: its schema.
func (s *Store) Where() string { return "the PostgreSQL schema " + s.schema }
