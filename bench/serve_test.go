package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/procstop"
)

// TestStartServerEarlyExit: a daemon that exits before it holds the lock
// is reported with its last lines, at once.
func TestStartServerEarlyExit(t *testing.T) {
	t.Parallel()
	// The serve arguments (root, "serve", flags) land in $0, $1, …
	cmd := []string{"sh", "-c", "echo 'cannot serve: broken' >&2; exit 3"}
	s, err := startServer(context.Background(), cmd, t.TempDir(), nil)
	if err == nil {
		s.close()
		t.Fatal("started a daemon that exited")
	}
	if !strings.Contains(err.Error(), "cannot serve: broken") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q, want the exit status and the daemon's last words", err)
	}
}

// TestStartServerReadyLine: a daemon that logs it is ready counts as
// started even when no lock of the expected name appears, and close
// stops it.
func TestStartServerReadyLine(t *testing.T) {
	t.Parallel()
	cmd := []string{"sh", "-c", `echo 'time=x level=INFO msg=ready' >&2; exec sleep 60`}
	s, err := startServer(context.Background(), cmd, t.TempDir(), func(err error) { t.Errorf("exit reported as early: %v", err) })
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := s.waitReady(time.Minute); err != nil {
		t.Errorf("waitReady: %v", err)
	}
	s.close()
	select {
	case <-s.exited:
	default:
		t.Errorf("still running after close")
	}
}

// TestPauseWaitsUntilStopped: pause returns once every thread of the
// daemon is stopped, and close ends a paused daemon.
func TestPauseWaitsUntilStopped(t *testing.T) {
	t.Parallel()
	cmd := []string{"sh", "-c", `echo 'time=x level=INFO msg=ready' >&2; exec sleep 60`}
	s, err := startServer(context.Background(), cmd, t.TempDir(), func(err error) { t.Errorf("exit reported as early: %v", err) })
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer s.close()
	if err := s.waitReady(time.Minute); err != nil {
		t.Fatal(err)
	}
	dir := fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no %s on this system: pause only sends the signal", dir)
	}
	if stopped, err := procstop.Stopped(dir); err != nil || stopped {
		t.Fatalf("a running daemon: stopped %v, %v", stopped, err)
	}
	if err := s.pause(); err != nil {
		t.Fatal(err)
	}
	if stopped, err := procstop.Stopped(dir); err != nil || !stopped {
		t.Errorf("after pause: stopped %v, %v", stopped, err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
