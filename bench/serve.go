package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/internal/procstop"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/files"
)

// server is a `workspaced serve` process on one root, observed from
// outside as agents observe it: its lock and the files it writes.
type server struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited
	ready  chan struct{} // closed when it logs that it is ready
	mu     sync.Mutex
	tail   []string // its last lines on stderr
	stop   bool     // set by close: the exit is expected
}

// startServer starts serveCmd (the binary and "--root") on root with the
// serve flags extra, and returns once the daemon holds the root's lock or
// logs that it is ready, whichever comes first (a daemon of another
// version may name its lock differently).
// onExit, if set, is called if the process exits before close.
func startServer(ctx context.Context, serveCmd []string, root string, onExit func(error), extra ...string) (*server, error) {
	args := append(append(append([]string{}, serveCmd[1:]...), root, "serve", "--log-format", "text"), extra...)
	cmd := exec.CommandContext(ctx, serveCmd[0], args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", serveCmd[0], err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), ready: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		ready := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.tail = append(s.tail, line)
			if len(s.tail) > 20 {
				s.tail = s.tail[1:]
			}
			s.mu.Unlock()
			// A daemon on PostgreSQL is ready once it leads.
			if !ready && (strings.Contains(line, "msg=ready") || strings.Contains(line, "msg=leading")) {
				ready = true
				close(s.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		close(s.exited)
		s.mu.Lock()
		expected := s.stop
		s.mu.Unlock()
		if !expected && onExit != nil {
			onExit(s.exitError(err))
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		held, _, err := locking.Held(files.LockPath(root))
		if err == nil && held {
			return s, nil
		}
		select {
		case <-s.ready:
			return s, nil
		case <-s.exited:
			return nil, s.exitError(cmd.ProcessState)
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("bench: %s serve holds no lock on %s after 30 s", serveCmd[0], root)
		}
	}
}

// exitError describes the daemon's early exit with its last words.
func (s *server) exitError(how any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Errorf("bench: the daemon exited (%v); its last lines:\n%s", how, strings.Join(s.tail, "\n"))
}

// waitReady waits until the daemon logs that its start-up scan is done.
func (s *server) waitReady(timeout time.Duration) error {
	select {
	case <-s.ready:
		return nil
	case <-s.exited:
		return s.exitError("before it was ready")
	case <-time.After(timeout):
		return fmt.Errorf("bench: the daemon did not log ready in %v", timeout)
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// close stops the daemon with SIGTERM, as a supervisor does, and kills it
// if it has not stopped after ten seconds.
func (s *server) close() {
	s.mu.Lock()
	s.stop = true
	s.mu.Unlock()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// pause stops the daemon (SIGSTOP) and returns once it has stopped
// (procstop): a probe of what it holds made before could miss a lock it
// took in the meantime.
func (s *server) pause() error {
	if err := procstop.Stop(s.cmd.Process, time.Minute); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
