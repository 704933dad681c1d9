package main

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"
)

// The daemon holds a descriptor for each file it has open, and where file
// events come from kqueue (macOS, FreeBSD) one for every directory and
// file it watches, so the open-files limit bounds how many active tasks
// it watches at once. Go raises the soft limit to the hard one when a
// program starts (since Go 1.19; on macOS no further than
// kern.maxfilesperproc), so serve only reports the two: raising the hard
// limit is the machine's business (ulimit -Hn, launchctl limit maxfiles).

// openFilesLimit is the process's soft and hard RLIMIT_NOFILE, as numbers
// or "unlimited".
func openFilesLimit() (soft, hard any, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil, nil, fmt.Errorf("getrlimit: %w", err)
	}
	return rlimitValue(uint64(lim.Cur)), rlimitValue(uint64(lim.Max)), nil
}

func rlimitValue(n uint64) any {
	if n == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return n
}

// logOpenFilesLimit logs the open-files limit at start-up.
func logOpenFilesLimit(log *slog.Logger) {
	soft, hard, err := openFilesLimit()
	if err != nil {
		log.Warn("cannot read the open-files limit", "err", err)
		return
	}
	log.Info("open files limit", "soft", soft, "hard", hard)
}
