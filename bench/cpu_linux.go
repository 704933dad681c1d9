package bench

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// cpuClockName says how cpuTime reads a process's CPU.
const cpuClockName = "clock_gettime of the process's CPU clock (clock_getcpuclockid): user and system time of all its threads, in ns"

// cpuTime is the CPU time process pid has used so far, all its threads
// (those that have exited too), read from its CPU clock: the
// nanosecond figure behind /proc/PID/stat's ticks.
func cpuTime(pid int) (time.Duration, error) {
	// clock_getcpuclockid(3): the process-wide CPUCLOCK_SCHED clock.
	clock := int32((^pid)<<3 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, fmt.Errorf("bench: CPU clock of process %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// renamedAt is when the file name was renamed into place: its ctime, which
// a rename sets (its mtime is the earlier write).
func renamedAt(name string) (time.Time, error) {
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return time.Time{}, err
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), nil
}

// threadCPU is the CPU time the calling thread has used so far, user and
// system (getrusage RUSAGE_THREAD): the caller locks its goroutine to the
// thread.
func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("bench: CPU of this thread: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
