package main

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestMain builds the workspaced binary once for the whole suite; every
// CLI test runs it as a subprocess, as a user would.
func TestMain(m *testing.M) {
	os.Exit(clitest.Main(m))
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
