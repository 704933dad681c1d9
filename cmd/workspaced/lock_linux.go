package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// killWithParent makes the kernel kill cmd when workspaced dies: the flock
// goes with workspaced's descriptor, so CMD must not outlive it and run on
// without the lock.
func killWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// startLocked starts cmd from a thread that stays alive: Pdeathsig fires
// when the thread that forked the child exits, and the Go runtime may end
// an unlocked thread. The calling goroutine keeps the thread until exit.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	return cmd.Start()
}
