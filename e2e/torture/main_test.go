// Package torture_test runs the workspaced binary on directory roots
// under abuse, as real processes: the daemon SIGKILLed at random moments
// while agents finish subtasks in bursts, bursts larger than the inotify
// queue, and many processes updating one entry at once. Every marker is
// applied exactly once, every event logged once, no update lost.
package torture_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }

// start starts the daemon on w with a short grace period for a marker
// that does not parse, without waiting for it to lead: a kill may land
// in its start-up.
func start(w *clitest.WS, args ...string) *clitest.Daemon {
	w.T.Helper()
	return w.Start(append([]string{"--grace", "200ms"}, args...)...)
}
