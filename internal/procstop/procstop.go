// Package procstop stops a process (SIGSTOP) and waits until it has
// stopped: the signal is delivered after kill returns, so a look at what
// the process holds made at once can miss what it takes in the meantime.
package procstop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Stop sends p SIGSTOP and returns once every thread of it is stopped, or
// an error after within. Where /proc does not list the process's threads
// (not Linux) it returns once the signal is sent.
func Stop(p *os.Process, within time.Duration) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	dir := fmt.Sprintf("/proc/%d/task", p.Pid)
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Microsecond) {
		stopped, err := Stopped(dir)
		if err != nil || stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %v of SIGSTOP", p.Pid, within)
		}
	}
}

// Stopped reports whether every thread listed in dir (/proc/PID/task) is
// stopped: state T or t in its stat, after the command's name.
func Stopped(dir string) (bool, error) {
	tids, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, t := range tids {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("%s/stat: %q", t.Name(), b)
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}
