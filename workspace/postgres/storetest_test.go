package postgres

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestConformance runs the suite every store passes against a fresh
// PostgreSQL workspace for each part, served by the real daemon under the
// lease.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) workspace.Served {
		s, _ := newStore(t)
		return s
	})
}
