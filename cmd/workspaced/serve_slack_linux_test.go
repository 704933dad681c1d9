package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace/files"
)

// The daemon runs with its timer slack: started again in its own place,
// the same process, which then serves.
func TestServeRunsWithItsTimerSlack(t *testing.T) {
	t.Parallel()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("no timer slack to read: %v", err)
	}
	if int64(own) >= daemonTimerSlack.Nanoseconds() {
		t.Skipf("the test runs with a timer slack of %d ns already: serve would not start again", own)
	}
	w := newWS(t)
	d := w.serve()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", d.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got != daemonTimerSlack.Nanoseconds() {
		t.Errorf("the daemon's timer slack is %d ns, want %d", got, daemonTimerSlack.Nanoseconds())
	}
	clitest.Eventually(t, "the daemon serving as the process it was started as", func() (bool, string) {
		r := w.Run("status", "--json")
		var s files.Status
		_ = json.Unmarshal([]byte(r.Stdout), &s)
		return s.Serving && s.PID == d.Pid(), r.String()
	})
	d.Stop()
}
