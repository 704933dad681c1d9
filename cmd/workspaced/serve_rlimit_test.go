package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"golang.org/x/sys/unix"
)

// serve logs its open-files limits once ready: the soft and hard limits of
// a Go program started from this one, which are this test's own.
func TestServeLogsOpenFilesLimit(t *testing.T) {
	t.Parallel()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("msg=\"open files limit\" soft=%v hard=%v", rlimitValue(uint64(lim.Cur)), rlimitValue(uint64(lim.Max)))
	w := newWS(t)
	srv := w.serve("--log-level", "info")
	clitest.Eventually(t, "the daemon to log its limits", func() (bool, string) {
		return strings.Contains(srv.Log.String(), `msg="open files limit"`), srv.Log.String()
	})
	if !strings.Contains(srv.Log.String(), want) {
		t.Errorf("log does not hold %s:\n%s", want, srv.Log)
	}
	srv.Stop()
}

// status names the limit that bounds the watches where the daemon runs:
// inotify's on Linux, the open-files limit where kqueue watches.
func TestWatchLimitHint(t *testing.T) {
	t.Parallel()
	for goos, want := range map[string]string{
		"linux":   "fs.inotify.max_user_watches",
		"darwin":  "launchctl limit maxfiles",
		"freebsd": "ulimit -n",
	} {
		if h := watchLimitHint(goos); !strings.Contains(h, want) {
			t.Errorf("%s: hint %q does not name %s", goos, h, want)
		}
	}
}
