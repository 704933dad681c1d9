// Package torture_test runs the workspaced binary on directory roots
// under abuse, as real processes: the daemon SIGKILLed at random moments
// while agents finish subtasks in bursts. Every marker is applied exactly
// once, every event logged once. (Markers the wake-ups miss, a burst
// larger than the inotify queue among them, are e2e/missed; many
// processes updating one entry at once, e2e/concurrent.)
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

// longEnv, set to 1, runs the SIGKILL crash tests at their long sizes
// (WORKSPACED_TORTURE_LONG=1: 2,000 markers over four tasks, 1,280 in
// bursts of 32, 240 subtasks under 30 kills). By default each is sized
// to what its assertions need, so the package stays short on a loaded
// machine: the same kills at the same random moments, bursts still 32
// agents wide, over fewer subtasks, every marker still checked applied
// exactly once and every event logged once.
const longEnv = "WORKSPACED_TORTURE_LONG"

// long reports whether $WORKSPACED_TORTURE_LONG asks for the long sizes.
func long(t *testing.T) bool {
	t.Helper()
	switch v := os.Getenv(longEnv); v {
	case "", "0":
		return false
	case "1":
		return true
	default:
		t.Fatalf("%s=%q: want 1 (the long sizes) or 0", longEnv, v)
		return false
	}
}

// sized is n, or full when $WORKSPACED_TORTURE_LONG asks for the long
// sizes.
func sized(t *testing.T, n, full int) int {
	t.Helper()
	if long(t) {
		return full
	}
	return n
}
