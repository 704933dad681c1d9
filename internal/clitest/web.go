package clitest

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Web is one `workspaced web` process of a test.
type Web struct {
	// URL is the panel's address, without a trailing slash.
	URL string
	// Cmd is the process; Stderr what it wrote there.
	Cmd    *exec.Cmd
	Stderr *Log
}

// Web starts `workspaced web` on a free loopback port with extra flags and
// returns once it printed its address; the test's cleanup stops it
// (SIGTERM, then SIGKILL after 10 s).
func (w *WS) Web(extra ...string) *Web {
	w.T.Helper()
	cmd := Command(append([]string{"web", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	p := &Web{Cmd: cmd, Stderr: &Log{}}
	cmd.Stderr = p.Stderr
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
			w.T.Fatalf("workspaced web printed %q; stderr:\n%s", u, p.Stderr)
		}
		p.URL = strings.TrimSuffix(u, "/")
	case <-time.After(60 * time.Second):
		w.T.Fatalf("workspaced web did not start; stderr:\n%s", p.Stderr)
	}
	return p
}
