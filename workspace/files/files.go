// Package files is the workspace Store over a directory tree: JSON files
// written atomically under flock, markers as files, the daemon's journal,
// state.json and its backups beside them (the layout docs/PROTOCOL.md
// describes).
//
// Most of the tree's code is *workspace.Workspace, which the daemon's
// commit path uses directly; Store adds what the tree keeps in code of
// other rooms (the journal, read as the daemon writes it), so that a
// *Store is a complete workspace.Store. What only a tree can do (paths,
// flock held for a child process, the root's os.Root) is reached through
// the embedded *workspace.Workspace, and callers that need it say so by
// asking for a *Store.
package files

import (
	"github.com/workspaced/workspaced/workspace"
)

// Store is a workspace tree as a workspace.Store.
type Store struct {
	*workspace.Workspace
	serve ServeOptions // the single writer's options (lead.go)
}

var _ workspace.Store = (*Store)(nil)

// Open opens the tree at dir (workspace.Open).
func Open(dir string, opt workspace.Options) (*Store, error) {
	w, err := workspace.Open(dir, opt)
	if err != nil {
		return nil, err
	}
	return &Store{Workspace: w}, nil
}

// Init creates the tree at dir if needed and opens it (workspace.Init).
func Init(dir string, opt workspace.Options) (*Store, error) {
	w, err := workspace.Init(dir, opt)
	if err != nil {
		return nil, err
	}
	return &Store{Workspace: w}, nil
}

// New wraps an open tree.
func New(w *workspace.Workspace) *Store { return &Store{Workspace: w} }

// ReadJournal reads task taskID's journal/ records in sequence order.
func (s *Store) ReadJournal(taskID string) ([]workspace.JournalRecord, error) {
	return ReadJournal(s.Workspace, taskID)
}
