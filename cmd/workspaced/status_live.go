package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// statusReport is `status --json`: the tree's status, and the serving
// daemon's own report when one answers.
type statusReport struct {
	service.TreeStatus
	Live *workspace.Live `json:"live,omitempty"`
}

// readLive asks the daemon serving root for its report; nil when none
// answers (no daemon, or one too old to have a status socket).
func readLive(root string, serving bool) *workspace.Live {
	if !serving {
		return nil
	}
	l, err := service.ReadLive(root)
	if err != nil {
		return nil
	}
	return &l
}

// printLive prints what the daemon said of itself: when it last
// rescanned, and what keeps it from serving everything at once.
func printLive(out io.Writer, l *workspace.Live) {
	if l == nil {
		return
	}
	if !l.LastRescan.IsZero() {
		fmt.Fprintf(out, "last rescan: %s ago\n", time.Since(l.LastRescan).Round(time.Second))
	}
	if l.Wakeups != "" {
		fmt.Fprintf(out, "wake-ups: %s, %d watches; %d file descriptors open of %d\n", l.Wakeups, l.Watches, l.Descriptors, l.DescriptorLimit)
	}
	if !l.Degraded() && len(l.Refused) == 0 {
		return
	}
	if l.Unwatched > 0 {
		fmt.Fprintf(out, "degraded: %d task directories not watched (%s); the rescans take their markers\n", l.Unwatched, l.UnwatchedReason)
		fmt.Fprintf(out, "hint: %s; the next rescan adds the watches missing, without a restart\n", watchLimitHint(runtime.GOOS))
	}
	for _, s := range l.Stopped {
		fmt.Fprintf(out, "degraded: task %s stopped since %s, retried %d times: %s\n", s.Task, shortTime(s.Since), s.Retries, s.Error)
		if s.Hint != "" {
			fmt.Fprintf(out, "hint: %s\n", s.Hint)
		}
	}
	for _, id := range l.Refused {
		fmt.Fprintf(out, "refused: tasks/%s is not a directory (a symlink?); it is never served\n", id)
	}
}

// watchLimitHint says which limit bounds the watches on goos: inotify's
// on Linux; elsewhere kqueue's, which holds a descriptor open for every
// directory and file watched.
func watchLimitHint(goos string) string {
	if goos == "linux" {
		return "raise the inotify watch limit (sysctl fs.inotify.max_user_watches)"
	}
	return "raise the open-files limit (ulimit -n; on macOS launchctl limit maxfiles): each watched directory and file holds a descriptor"
}
