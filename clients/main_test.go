// Package clients_test runs the suites of the clients in clients/ (the
// Python package and the TypeScript client) against the real binary, each
// store served by `workspaced serve --listen`. They are a package of their
// own so that `go test ./...` runs them beside the command's tests.
package clients_test

import (
	"bufio"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }

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

// webProc is one `workspaced web` process.
type webProc struct {
	url    string
	stderr *clitest.Log
}

// web starts `workspaced web` on a free loopback port and returns once it
// printed its address.
func (w *ws) web(extra ...string) *webProc {
	w.T.Helper()
	cmd := clitest.Command(append([]string{"web", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	p := &webProc{stderr: &clitest.Log{}}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.T.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.T.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	w.T.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			w.T.Fatalf("workspaced web printed %q; stderr:\n%s", u, p.stderr)
		}
		p.url = strings.TrimSuffix(u, "/")
	case <-time.After(60 * time.Second):
		w.T.Fatalf("workspaced web did not start; stderr:\n%s", p.stderr)
	}
	return p
}
