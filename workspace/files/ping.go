package files

import (
	"context"
	"fmt"
)

// Ping reports whether the tree answers: its workspace.json can be
// looked at.
func (s *Store) Ping(context.Context) error {
	if _, err := s.Root().Stat("workspace.json"); err != nil {
		return fmt.Errorf("the workspace does not answer: %w", err)
	}
	return nil
}
