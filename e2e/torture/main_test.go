// Package torture_test runs the workspaced binary on directory roots
// under abuse, as real processes: the daemon SIGKILLed at random moments
// while agents finish subtasks in bursts, and many processes updating
// one entry at once. Every marker is applied exactly once, every event
// logged once, no update lost. (Markers the wake-ups miss, a burst
// larger than the inotify queue among them, are e2e/missed.)
package torture_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests, four at once: they wait on the daemons and the
// binaries they start far more than they compute.
func TestMain(m *testing.M) {
	clitest.Waiting(4)
	os.Exit(clitest.Main(m))
}

// start starts the daemon on w with a short grace period for a marker
// that does not parse, without waiting for it to lead: a kill may land
// in its start-up.
func start(w *clitest.WS, args ...string) *clitest.Daemon {
	w.T.Helper()
	return w.Start(append([]string{"--grace", "200ms"}, args...)...)
}

// sized is n, or full when $WORKSPACED_TORTURE_LONG asks for the long
// sizes (2,000 markers over four tasks, 1,280 in bursts of 32, 240
// subtasks under 30 kills): see clitest.LongEnv.
func sized(t *testing.T, n, full int) int {
	t.Helper()
	return clitest.Sized(t, n, full)
}
