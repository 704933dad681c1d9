package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The daemon's timer slack. Go's runtime keeps a monitor thread (sysmon)
// that, from the first system call after the process was idle, wakes
// every 20 µs for as long as a goroutine runs or waits in a system call
// (to take the processor of a long call for other goroutines, to preempt
// a goroutine after 10 ms); with the kernel's default slack of 50 µs,
// about every 70 µs. A lone marker keeps the daemon busy for a
// millisecond or more, most of it in fsync: 30 to 60 wake-ups of that
// thread a marker, each a nanosleep and two context switches, 15 to 30 %
// of the daemon's CPU on a loaded machine (docs/PERFORMANCE.md). A thread's timer slack lets
// the kernel end its sleeps that much late, so with 1 ms the monitor
// wakes about once a millisecond while the daemon works. What waits for
// a timer may wake up to that much later: the runtime's own short sleeps
// and the daemon's timers (SQLite's look 0.25 ms after a write heard,
// which already waits for the poller's millisecond); nothing waiting for
// an event (inotify, a socket, a channel, a lock) does.
//
// The monitor thread is started before any of the program's code runs,
// with the slack of the thread that started the process, and a thread
// takes its slack from the thread that makes it; the slack survives
// execve. So serve sets the slack on its own thread and starts its binary
// again in its place (the same process id, the same descriptors), which
// then runs every thread with it. It does so once: the second start finds
// the slack set, as does a start under systemd's TimerSlackNSec. Where
// the kernel keeps the slack at 0 (a realtime thread) or refuses, serve
// runs as it is.

// daemonTimerSlack is the timer slack serve runs with.
const daemonTimerSlack = time.Millisecond

// withTimerSlack starts the binary again with slack, unless the process
// runs with that much already (then it returns nil at once); it returns
// only when it cannot.
func withTimerSlack(slack time.Duration) error {
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || int64(cur) >= slack.Nanoseconds() {
		return nil
	}
	// prctl sets this thread's slack, and execve replaces the process
	// from this thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("set the timer slack: %w", err)
	}
	if got, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil || int64(got) < slack.Nanoseconds() {
		// Kept at 0 (a realtime policy): starting again would not end.
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
		return nil
	}
	err = syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
	return fmt.Errorf("start again with a timer slack of %s: %w", slack, err)
}
