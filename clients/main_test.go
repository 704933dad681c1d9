// Package clients_test runs the suites of the clients in clients/ (the
// Python package and the TypeScript client) against the real binary, each
// store served by `workspaced serve --listen`. They are a package of their
// own so that `go test ./...` runs them beside the command's tests.
package clients_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain runs the tests, 8 at once: they wait on their daemons and runners.
func TestMain(m *testing.M) {
	clitest.Waiting(8)
	os.Exit(clitest.Main(m))
}

// ws is a workspace made for one test.
type ws struct {
	*clitest.WS
}

// newKindWS is a new workspace on kind: files, sqlite or postgres.
func newKindWS(t *testing.T, kind string) *ws {
	t.Helper()
	switch kind {
	case "sqlite":
		sw, _ := clitest.NewSQLite(t)
		return &ws{sw}
	case "postgres":
		w := &ws{clitest.At(t, pgtest.Schema(t))}
		w.Ok("--root", w.Root, "init")
		return w
	}
	return &ws{clitest.NewDir(t)}
}

// addToken runs `workspaced token add` with args and returns the token.
func (w *ws) addToken(args ...string) string {
	w.T.Helper()
	tok, _ := w.AddToken(args...)
	return tok
}

// opsServe starts the daemon with its HTTP listener on a port of the
// loopback and returns it with the listener's URL.
func (w *ws) opsServe(extra ...string) (*clitest.Daemon, string) {
	w.T.Helper()
	cmd := clitest.Command(append([]string{"serve", "--grace", "200ms", "--log-level", "info", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	d := w.StartCmd(cmd)
	w.AwaitLead(d)
	return d, d.OpsURL()
}
