package panel_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The panel (`workspaced web`) in a real browser: Debian's Chromium,
// headless, one per test binary, a tab of its own for each test. Its tests
// wait on Chromium, the panel and the daemon far more than they compute:
// 8 run at once.
func TestMain(m *testing.M) {
	clitest.Waiting(8)
	code := clitest.Main(m)
	closeBrowser()
	removeDemo()
	os.Exit(code)
}

// ws is a workspace made for one test (clitest.WS) with the helpers this
// package's tests use.
type ws struct {
	*clitest.WS
}

// newWS runs `workspaced init` on a fresh directory root and returns a ws
// whose commands find the root through WORKSPACE_ROOT and run in the
// root's parent directory.
func newWS(t *testing.T) *ws {
	t.Helper()
	return &ws{clitest.NewDir(t)}
}

// serve starts the daemon on the workspace with a short grace period and
// returns once it holds the workspace's lock.
func (w *ws) serve(extra ...string) *clitest.Daemon {
	w.T.Helper()
	return w.Serve(append([]string{"--grace", "200ms"}, extra...)...)
}
