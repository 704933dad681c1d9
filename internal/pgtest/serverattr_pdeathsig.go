//go:build linux || freebsd

package pgtest

import "syscall"

// serverAttr runs the server as cred in a process group of its own, and
// has the kernel send it SIGQUIT, PostgreSQL's immediate shutdown, when
// the test binary dies: a killed test run leaves no server behind.
func serverAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
}
