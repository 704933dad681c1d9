package postgres

import (
	"testing"
	"time"

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
		// A watch hears memory and the friction log by polling: every
		// 100ms rather than 2s, so that testWatch's six waits for them
		// do not take a dozen seconds.
		s.watchEvery = 100 * time.Millisecond
		return s
	})
}
