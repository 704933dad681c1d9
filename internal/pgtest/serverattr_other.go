//go:build !linux && !freebsd

package pgtest

import "syscall"

// serverAttr runs the server as cred in a process group of its own. There
// is no parent-death signal here (macOS has none): Close stops the server,
// but a test binary killed outright leaves it running, and its temporary
// directory in place, until it is stopped by hand.
func serverAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}
