//go:build !linux

package bench

import (
	"errors"
	"os"
	"time"
)

const cpuClockName = "none"

// cpuTime reads another process's CPU clock only on Linux.
func cpuTime(int) (time.Duration, error) {
	return 0, errors.New("bench: the scale rows read the daemon's CPU clock, which only Linux offers")
}

// renamedAt is the file name's mtime, where its ctime is not read.
func renamedAt(name string) (time.Time, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// threadCPU reads a thread's CPU only on Linux.
func threadCPU() (time.Duration, error) {
	return 0, errors.New("bench: the scale rows' floor reads the writing thread's CPU, which only Linux offers")
}
