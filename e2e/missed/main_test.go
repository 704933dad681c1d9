// Package missed_test runs the workspaced daemon on a directory root
// where its wake-ups miss markers: markers dropped while no daemon runs,
// a task directory that arrives with its marker inside, and a burst
// larger than the inotify queue. Each marker is applied exactly once.
// (It is apart from e2e/torture so that each package stays short.)
package missed_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }

// start starts the daemon on w with a short grace period for a marker
// that does not parse.
func start(w *clitest.WS, args ...string) *clitest.Daemon {
	w.T.Helper()
	return w.Start(append([]string{"--grace", "200ms"}, args...)...)
}
