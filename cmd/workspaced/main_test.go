package main

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests with every command a ws runs going through
// run in-process where that is the same as starting the binary; the tests
// of the process itself start the binary, built on first use. Most of
// them wait on daemons, browsers and databases: 8 run at once.
func TestMain(m *testing.M) {
	clitest.Waiting(8)
	clitest.InProcess(run)
	code := clitest.Main(m)
	os.Exit(code)
}

// ws is a workspace made for one test (clitest.WS) with the helpers only
// this package's tests use.
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
