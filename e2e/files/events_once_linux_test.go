package files_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// stopper stops the daemon (SIGSTOP) the moment a file of a task
// directory is written: events.log closed after an append, or state.json
// renamed into place. The kernel reports both through inotify as they
// happen, so the daemon is stopped a few instructions past that point of
// its commit — between its events and its state, whichever comes first.
type stopper struct {
	f     *os.File
	pid   int
	armed atomic.Pointer[string]
	hit   chan string
}

func newStopper(t *testing.T, dir string, pid int) *stopper {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	s := &stopper{f: os.NewFile(uintptr(fd), "inotify"), pid: pid, hit: make(chan string, 1)}
	go s.run()
	t.Cleanup(func() { s.f.Close() })
	return s
}

// arm has the next write of name stop the daemon.
func (s *stopper) arm(name string) { s.armed.Store(&name) }

func (s *stopper) run() {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			l := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+l]), "\x00")
			off += unix.SizeofInotifyEvent + l
			if want := s.armed.Load(); want != nil && *want == name && s.armed.CompareAndSwap(want, nil) {
				_ = syscall.Kill(s.pid, syscall.SIGSTOP)
				s.hit <- name
			}
		}
	}
}

// await waits until the armed write has stopped the daemon (true), or
// until over holds with the stopper still armed (false: it is disarmed).
// Neither within 90 s fails the test.
func (s *stopper) await(t *testing.T, over func() bool) bool {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.hit:
			return true
		case <-tick.C:
			if want := s.armed.Load(); want != nil && over() && s.armed.CompareAndSwap(want, nil) {
				return false
			}
		}
	}
	t.Fatal("the daemon wrote nothing armed for 90 s, and the burst is not over")
	return false
}

// remount remounts mnt with opts ("ro" or "rw"), agents held off meanwhile
// (hold). A read-only remount is refused (EBUSY) while a file is open for
// writing: the daemon, stopped, may be in the middle of a write, so it is
// let go on for a moment and stopped again until the remount succeeds.
func remount(t *testing.T, srv *clitest.Daemon, hold *sync.RWMutex, mnt, opts string) {
	t.Helper()
	hold.Lock()
	defer hold.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command("mount", "-o", "remount,"+opts, mnt).CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("remount %s: %v\n%s", opts, err, out)
		}
		_ = srv.Cmd.Process.Signal(syscall.SIGCONT)
		time.Sleep(time.Millisecond) // let its write finish: its end cannot be awaited from here
		_ = srv.Cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// TestServeReadOnlyRemountEventsOnce: agents finish the subtasks of a
// task in a burst while the filesystem is remounted read-only under the
// daemon and read-write again, cycles times, the daemon stopped for each
// remount right after it appended a commit's events or right after it
// wrote a state. The commits that meet the read-only filesystem fail and
// are retried; in the end every event of every journal record is in
// events.log exactly once, in order.
func TestServeReadOnlyRemountEventsOnce(t *testing.T) {
	t.Parallel()
	const (
		subtasks = 200
		agents   = 8
		cycles   = 10
	)
	mnt := clitest.SmallExt4(t, 64<<20)
	w := clitest.NewDir(t, mnt)
	x := w.Open()
	srv := start(w, "--rescan", "1s")
	clitest.ExecutingTask(t, x, "t1", subtasks)
	for s := 1; s <= subtasks; s++ {
		if _, err := x.WriteOutput(context.Background(), "t1", fmt.Sprintf("st_%d", s), "w", []byte(`{"summary":"done"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var hold sync.RWMutex // agents write under its read lock; a remount takes it
	// Agents retry a marker the read-only filesystem refused.
	retry := func(write func() error) {
		for {
			hold.RLock()
			err := write()
			hold.RUnlock()
			if err == nil {
				return
			}
			time.Sleep(5 * time.Millisecond) // an agent's pace while the filesystem is read-only
		}
	}
	var wg sync.WaitGroup
	for a := range agents {
		wg.Go(func() {
			for s := 1 + a; s <= subtasks; s += agents {
				sub, agent := fmt.Sprintf("st_%d", s), fmt.Sprintf("worker_%d", a)
				retry(func() error { _, err := x.WriteClaim(context.Background(), "t1", agent, sub); return err })
				retry(func() error {
					_, err := x.WriteDone(context.Background(), workspace.DoneRequest{TaskID: "t1", Agent: agent, OutputFile: "outputs/" + sub + ".json", SubtaskID: sub})
					return err
				})
				time.Sleep(10 * time.Millisecond) // an agent's pace, so that the burst outlasts the remounts
			}
		})
	}
	stp := newStopper(t, filepath.Join(w.Root, "tasks", "t1"), srv.Pid())
	failed := 0
	over := func() bool { st, _ := x.ReadState(context.Background(), "t1"); return st.Status == "completed" }
	for c := range cycles {
		target := []string{workspace.EventsFile, "state.json"}[c%2]
		stp.arm(target)
		if !stp.await(t, over) {
			t.Logf("the burst was over after %d read-only remounts", c)
			break
		}
		remount(t, srv, &hold, mnt, "ro")
		if err := srv.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// The daemon meets the read-only filesystem at its next write,
		// unless no marker was left for it to take.
		met := false
		clitest.Eventually(t, "the daemon to stop task t1 on the read-only filesystem", func() (bool, string) {
			why, stopped := stoppedTask(w.Live(), "t1")
			met = stopped
			return stopped || !markerWaiting(w.Root, "t1"), why
		})
		if met {
			failed++
		}
		remount(t, srv, &hold, mnt, "rw")
		_ = srv.Cmd.Process.Signal(syscall.SIGCONT)
		clitest.Eventually(t, "the daemon to serve task t1 again", func() (bool, string) {
			why, stopped := stoppedTask(w.Live(), "t1")
			return !stopped, why
		})
	}
	wg.Wait()
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Status == "completed" })
	srv.Stop()
	clitest.CheckJournal(t, x, "t1")
	recs, evs := clitest.CheckEventsOnce(t, x, "t1")
	if want := 2 + 2*subtasks; recs != want {
		t.Errorf("%d records, want %d", recs, want)
	}
	if failed == 0 {
		t.Error("the daemon never met the read-only filesystem: the test exercised nothing")
	}
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("rebuild differs:\n%s", out)
	}
	t.Logf("%d read-only remounts met by the daemon; checked %d records, %d events", failed, recs, evs)
}

// markerWaiting reports whether task id's directory holds a marker.
func markerWaiting(root, id string) bool {
	ents, _ := os.ReadDir(filepath.Join(root, "tasks", id))
	for _, e := range ents {
		if _, ok := workspace.IsMarkerName(e.Name()); ok {
			return true
		}
	}
	return false
}
