// Package files_test runs the workspaced binary on directory roots as
// real processes, where the filesystem itself is the test: a full disk
// and read-only remounts on a loop-mounted ext4, the inotify watch limit,
// rescans of thousands of tasks while cleanup removes them, and the
// daemon at scale.
package files_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests, four at once: they wait on the daemons and the
// binaries they start far more than they compute.
func TestMain(m *testing.M) {
	clitest.Waiting(4)
	os.Exit(clitest.Main(m))
}

// start starts the daemon on w with a short grace period for a marker
// that does not parse, without waiting for it to lead.
func start(w *clitest.WS, args ...string) *clitest.Daemon {
	w.T.Helper()
	return w.Start(append([]string{"--grace", "200ms"}, args...)...)
}

// stoppedTask reports whether live names task id as stopped, and why.
func stoppedTask(l *workspace.Live, id string) (string, bool) {
	if l == nil {
		return "", false
	}
	for _, s := range l.Stopped {
		if s.Task == id {
			return s.Error, true
		}
	}
	return "", false
}
