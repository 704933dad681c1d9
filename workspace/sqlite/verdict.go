package sqlite

import (
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.VerdictSource = (*Store)(nil)

// Serving reports whether a daemon holds the daemon's lock now.
func (s *Store) Serving() (bool, error) {
	held, _, err := locking.Held(s.leadFile())
	return held, err
}

// Where names the workspace in messages: its database file.
func (s *Store) Where() string { return "the SQLite database " + s.path }
