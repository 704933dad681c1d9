package main

import (
	"os/exec"

	"github.com/workspaced/workspaced/internal/clitest"
)

// The panel's tests in a real browser are in e2e/panel; here are the
// panel's listener, its tokens and its streams, driven over HTTP.

// webProc is one `workspaced web` process (clitest.Web) under the names
// this package's tests use.
type webProc struct {
	url    string
	cmd    *exec.Cmd
	stderr *clitest.Log
}

// web starts `workspaced web` on a free loopback port and returns once it
// printed its address.
func (w *ws) web(extra ...string) *webProc {
	w.T.Helper()
	p := w.Web(extra...)
	return &webProc{url: p.URL, cmd: p.Cmd, stderr: p.Stderr}
}
