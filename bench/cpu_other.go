//go:build !linux

package bench

import (
	"errors"
	"time"
)

const cpuClockName = "none"

// cpuTime reads another process's CPU clock only on Linux.
func cpuTime(int) (time.Duration, error) {
	return 0, errors.New("bench: the scale rows read the daemon's CPU clock, which only Linux offers")
}
