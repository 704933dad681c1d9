package files_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// The inotify watch limit is lowered for the daemon alone: it runs in a
// user namespace of its own, whose limit (/proc/sys/user/max_inotify_watches
// as seen from inside) counts only the watches made there. The host's
// fs.inotify.max_user_watches is never touched, so the test is safe beside
// every other process of the machine, tests of other packages included.

// setWatchLimit is the shell that sets the user namespace's watch limit
// to $0 and then runs its arguments.
const setWatchLimit = `echo "$0" > /proc/sys/user/max_inotify_watches && exec "$@"`

// inUserNS prepares cmd to run in a new user namespace in which the
// caller's user and group are root.
func inUserNS(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
}

// canLimitWatches reports why a user namespace with its own watch limit
// cannot be made here ("" when it can).
func canLimitWatches() string {
	cmd := exec.Command("/bin/sh", "-c", setWatchLimit, "8", "true")
	inUserNS(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("%v %s", err, bytes.TrimSpace(out))
	}
	return ""
}

// serveWatchLimited starts the daemon on w in a user namespace allowed
// limit inotify watches.
func serveWatchLimited(w *clitest.WS, limit int, extra ...string) *clitest.Daemon {
	w.T.Helper()
	args := append([]string{"-c", setWatchLimit, strconv.Itoa(limit), clitest.Bin(), "serve", "--grace", "200ms"}, extra...)
	cmd := exec.Command("/bin/sh", args...)
	inUserNS(cmd)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	return w.StartCmd(cmd)
}

// watchedInodes is the inodes process pid holds inotify watches on, read
// from its descriptors' fdinfo ("inotify wd:1 ino:1a2b sdev:…").
func watchedInodes(t *testing.T, pid int) map[uint64]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]bool{}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for line := range strings.Lines(string(data)) {
			rest, ok := strings.CutPrefix(line, "inotify wd:")
			if !ok {
				continue
			}
			for f := range strings.FieldsSeq(rest) {
				if hex, ok := strings.CutPrefix(f, "ino:"); ok {
					ino, err := strconv.ParseUint(hex, 16, 64)
					if err != nil {
						t.Fatalf("%s: %q: %v", dir, line, err)
					}
					out[ino] = true
				}
			}
		}
	}
	return out
}

// unwatchedTasks is the ids whose directory process pid has no watch on.
func unwatchedTasks(t *testing.T, root string, pid int, ids []string) []string {
	t.Helper()
	watched := watchedInodes(t, pid)
	var out []string
	for _, id := range ids {
		fi, err := os.Stat(filepath.Join(root, "tasks", id))
		if err != nil {
			t.Fatal(err)
		}
		if !watched[fi.Sys().(*syscall.Stat_t).Ino] {
			out = append(out, id)
		}
	}
	return out
}

// TestServeInotifyLimit serves 40 active tasks with room for 15 task
// watches: the 25 tasks left without one are counted and said once, and
// their markers are taken by the rescans; once the limit is raised, the
// rescans add the missing watches without a restart.
func TestServeInotifyLimit(t *testing.T) {
	t.Parallel()
	if why := canLimitWatches(); why != "" {
		t.Skipf("cannot lower the inotify watch limit in a user namespace here: %s", why)
	}
	const (
		active = 40
		limit  = 16 // tasks/ and 15 task directories
		missed = active - (limit - 1)
	)
	w := clitest.NewDir(t)
	var gs []clitest.GenTask
	var ids []string
	for i := range active {
		gs = append(gs, clitest.GenTask{ID: fmt.Sprintf("run-%02d", i), Status: vocab.StatusExecuting, Age: time.Hour})
		ids = append(ids, gs[i].ID)
	}
	clitest.WriteGenTasks(t, w.Root, gs, time.Now())
	srv := serveWatchLimited(w, limit, "--rescan", "200ms", "--log-level", "info")
	pid := srv.Pid()
	w.AwaitServing()

	l := w.LiveNow()
	if l.Unwatched != missed || !strings.Contains(l.UnwatchedReason, "no space left on device") {
		t.Fatalf("live: %d unwatched (%q), want %d for lack of watches", l.Unwatched, l.UnwatchedReason, missed)
	}
	unwatched := unwatchedTasks(t, w.Root, pid, ids)
	if len(unwatched) != missed {
		t.Fatalf("the daemon has no watch on %d task directories, want %d: %v", len(unwatched), missed, unwatched)
	}
	s := w.StatusJSON()
	if s.Live == nil || s.Live.Unwatched != missed || s.Live.UnwatchedReason == "" || !s.Live.Degraded() {
		t.Errorf("status --json live = %+v, want %d unwatched with a reason", s.Live, missed)
	}
	if out := w.Ok("status"); !strings.Contains(out, fmt.Sprintf("degraded: %d task directories not watched", missed)) ||
		!strings.Contains(out, "hint: raise the inotify watch limit") {
		t.Errorf("status does not say the tasks are not watched, with a hint:\n%s", out)
	}

	// A claim in each task: those without a watch wait for a rescan, the
	// others are woken by their watch.
	for _, id := range ids {
		w.Ok("claim", "--task", id, "--agent", "worker_2", "--subtask", "st_1")
	}
	x := w.Open()
	for _, id := range ids {
		clitest.StateWhere(t, x, id, func(st workspace.State) bool { return st.JournalSeq == 1 })
	}
	if still := unwatchedTasks(t, w.Root, pid, ids); !slices.Equal(still, unwatched) {
		t.Errorf("the tasks without a watch changed while their markers were taken: %v, then %v", unwatched, still)
	}
	if s := w.StatusJSON(); s.MarkersWaiting != 0 {
		t.Errorf("%d markers still waiting", s.MarkersWaiting)
	}
	w.AwaitRescans(3)
	const said = "task directories not watched"
	if n := strings.Count(srv.Log.String(), said); n != 1 {
		t.Errorf("the daemon said %q %d times, want once:\n%s", said, n, clitest.TailLines(srv.Log.String(), 20))
	}

	// Raised (from inside the daemon's namespace), the limit lets the
	// rescans add the watches missing.
	if os.Getuid() != 0 {
		t.Log("not root: the limit is not raised again")
	} else if _, err := exec.LookPath("nsenter"); err != nil {
		t.Log("no nsenter: the limit is not raised again")
	} else {
		raise := exec.Command("nsenter", "--user", "--target", strconv.Itoa(pid), "/bin/sh", "-c", setWatchLimit, "1000", "true")
		if out, err := raise.CombinedOutput(); err != nil {
			t.Fatalf("raise the daemon's watch limit: %v\n%s", err, out)
		}
		clitest.Eventually(t, "every task directory watched", func() (bool, string) {
			l := w.LiveNow()
			return l.Unwatched == 0, fmt.Sprintf("%d unwatched", l.Unwatched)
		})
		if left := unwatchedTasks(t, w.Root, pid, ids); len(left) != 0 {
			t.Errorf("the daemon says every task is watched, but has no watch on %v", left)
		}
		// The count is live before the rescan that emptied it says so.
		clitest.Eventually(t, "the daemon says the tasks are watched again", func() (bool, string) {
			return strings.Contains(srv.Log.String(), "every active task directory is watched again"), clitest.TailLines(srv.Log.String(), 20)
		})
	}
	if strings.Contains(srv.Log.String(), "level=ERROR") {
		t.Errorf("the daemon logged errors:\n%s", clitest.TailLines(srv.Log.String(), 20))
	}
	srv.Stop()
}

// TestServeRescanReadsNothingIdle: once every task has been looked at, a
// rescan of a tree where nothing happens reads no file: each task
// directory is looked up, and one unchanged since it was last found quiet
// is not read, active or finished. What the daemon reads is counted by
// the kernel (/proc/<pid>/io rchar); a rescan that read the state.json of
// each of the 200 active tasks would read over 100 KiB.
func TestServeRescanReadsNothingIdle(t *testing.T) {
	t.Parallel()
	const active, finished = 200, 200
	w := clitest.NewDir(t)
	var gs []clitest.GenTask
	for i := range active {
		gs = append(gs, clitest.GenTask{ID: fmt.Sprintf("run-%03d", i), Status: vocab.StatusExecuting, Age: time.Hour})
	}
	for i := range finished {
		gs = append(gs, clitest.GenTask{ID: fmt.Sprintf("done-%03d", i), Status: vocab.StatusCompleted, Age: 48 * time.Hour})
	}
	clitest.WriteGenTasks(t, w.Root, gs, time.Now())
	// Subtasks in progress stay under their timeouts: no friction to record.
	clitest.WriteFileAll(t, filepath.Join(w.Root, "workspace.json"),
		[]byte(`{"friction": {"timeout_low": "720h", "timeout_medium": "720h", "timeout_high": "720h"}}`+"\n"))
	srv := start(w, "--rescan", "100ms")
	pid := srv.Pid()
	w.AwaitServing()
	w.AwaitRescans(2) // every task looked at once more after the start

	before := readProcIO(t, pid)
	w.AwaitRescans(5)
	after := readProcIO(t, pid)
	// The Go runtime wakes its poller through an eventfd: 8 bytes read
	// and written a wake-up, a few a rescan.
	const runtimeNoise = 1024
	if read := after.rchar - before.rchar; read > runtimeNoise {
		t.Errorf("5 rescans of an idle tree read %d bytes, want none (the runtime's own wake-ups aside)", read)
	}
	if wrote := after.writeBytes - before.writeBytes; wrote != 0 {
		t.Errorf("5 rescans of an idle tree wrote %d bytes", wrote)
	}
	srv.Stop()
}
