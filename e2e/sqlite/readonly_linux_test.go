package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/procstop"
	"github.com/workspaced/workspaced/workspace"
)

// errorsExt4 is clitest.SmallExt4 mounted with errors=remount-ro, and the file
// that makes ext4 report an error on it (ext4's sysfs trigger_fs_error):
// writing it turns the filesystem read-only under the processes using
// it, as a real disk error does. It skips the test, saying why, where the
// kernel has no such file.
func errorsExt4(t *testing.T, size int64) (mnt, trigger string) {
	t.Helper()
	mnt = clitest.SmallExt4(t, size)
	remount(t, mnt, "errors=remount-ro")
	dev, err := exec.Command("findmnt", "-n", "-o", "SOURCE", mnt).Output()
	if err != nil {
		optdep.Skipf(t, "ext4 errors", "skipped: findmnt %s: %v (Debian package util-linux)", mnt, err)
	}
	trigger = filepath.Join("/sys/fs/ext4", filepath.Base(strings.TrimSpace(string(dev))), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		optdep.Skipf(t, "ext4 errors", "skipped: this kernel has no %s to make ext4 fail: %v", trigger, err)
	}
	return mnt, trigger
}

// ext4Error makes ext4 report an error on its filesystem: with
// errors=remount-ro it turns read-only at once.
func ext4Error(t *testing.T, trigger string) {
	t.Helper()
	if err := os.WriteFile(trigger, []byte("workspaced test"), 0o200); err != nil {
		t.Fatal(err)
	}
}

// repairExt4 does what an administrator does once ext4 has turned a
// filesystem read-only after an error (remounting it read-write is
// refused then): unmount it, check it with e2fsck, mount it again. No
// process may have a file open on it.
func repairExt4(t *testing.T, mnt string) {
	t.Helper()
	dev, err := exec.Command("findmnt", "-n", "-o", "SOURCE", mnt).Output()
	if err != nil {
		t.Fatal(err)
	}
	back, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(strings.TrimSpace(string(dev))), "loop", "backing_file"))
	if err != nil {
		t.Fatal(err)
	}
	image := strings.TrimSpace(string(back))
	eventually(t, "umount "+mnt, func() (bool, string) {
		out, err := exec.Command("umount", mnt).CombinedOutput()
		return err == nil, string(out)
	})
	// e2fsck exits 1 when it corrected errors, as it does here: the error
	// the test made is recorded in the superblock.
	out, err := exec.Command("e2fsck", "-f", "-y", image).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() > 1) {
		t.Fatalf("e2fsck %s: %v: %s", image, err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", image, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", image, err, out)
	}
}

// TestReadOnlyUnderDaemon: the filesystem under a serving daemon turns
// read-only (ext4 with errors=remount-ro meeting an error) while agents
// write markers and markers wait. The daemon keeps running: it stops the
// task it cannot commit and retries, and status reports the read_only
// fault and the stopped task with the hint. Agents' writes fail with the
// read-only error and its hint (never "database is locked", never a
// panic); reads go on: status, task list, state show, env list, events,
// export. The administrator stops the daemon (SIGTERM: it exits), unmounts
// the filesystem, checks it and mounts it again; the daemon started again
// takes every marker: each one an agent was told was written is journaled
// exactly once, every subtask completes, integrity_check says ok.
func TestReadOnlyUnderDaemon(t *testing.T) {
	t.Parallel()
	const (
		id       = "rofs"
		subtasks = 48 // the last 4 are worker_t's
		agents   = 3
		mine     = "worker_t"
	)
	mnt, trigger := errorsExt4(t, 32<<20)
	w := clitest.New(t, "sqlite:"+filepath.Join(mnt, "agents.db"))
	s := openStore(t, w.Root)
	subs := prepareWithOutputs(t, s, id, subtasks)
	w.Ok("env", "store", "--task", id, "--key", "k", "--description", "d", "--value", `"v"`)
	theirs, reserved := subs[:subtasks-4], subs[subtasks-4:]
	d := w.Serve()
	a := startFaultAgents(t, w, s, d, id, theirs, agents)

	// Mid-burst: the daemon is held still while a marker of worker_t
	// waits, so that it meets the read-only filesystem with work to
	// commit.
	stopIdle(t, d, strings.TrimPrefix(w.Root, "sqlite:"))
	claim := func(sub string) []string { return []string{"claim", "--task", id, "--agent", mine, "--subtask", sub} }
	if err := a.wrote.note("claim", id, reserved[0], path.Base(strings.TrimSpace(w.Ok(claim(reserved[0])...)))); err != nil {
		t.Fatal(err)
	}
	// Commands started before the error may meet it or not.
	a.pause(t)
	a.setFault("mending")
	a.paused.Store(false)
	ext4Error(t, trigger)
	a.setFault("read-only")
	if err := d.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the daemon to say the filesystem is read-only", func() (bool, string) {
		l := d.Log.String()
		return strings.Contains(l, `msg="task stopped, retrying" task=`+id) && strings.Contains(l, "read-only file system") &&
			strings.Contains(l, "the filesystem is mounted read-only"), l
	})
	var st workspace.StoreStatus
	waitFor(t, w, func(out string) bool {
		st = workspace.StoreStatus{}
		return json.Unmarshal([]byte(out), &st) == nil && st.Live != nil && len(st.Live.Stopped) == 1
	}, "status", "--json")
	if got := st.Live.Stopped[0]; got.Task != id || got.Fault != workspace.FaultReadOnly || !strings.Contains(got.Hint, "mounted read-only") {
		t.Fatalf("status --json on the read-only filesystem: stopped %+v, want %s stopped as %s with the hint", got, id, workspace.FaultReadOnly)
	}
	if st.Fault == nil || st.Fault.Kind != workspace.FaultReadOnly || !st.Serving || st.MarkersWaiting == 0 {
		t.Fatalf("status --json on the read-only filesystem: fault %+v, serving %v, %d markers waiting", st.Fault, st.Serving, st.MarkersWaiting)
	}
	out := w.Ok("status")
	t.Logf("status on the read-only filesystem:\n%s", out)
	if !strings.Contains(out, "degraded: read_only: ") || !strings.Contains(out, "degraded: task "+id+" stopped since ") ||
		!strings.Contains(out, "hint: the filesystem is mounted read-only") {
		t.Fatalf("status on the read-only filesystem:\n%s", out)
	}
	readsGoOn(t, w, id)
	a.mustFail(t, "read-only", claim(reserved[1])...)
	a.mustFail(t, "read-only", "env", "store", "--task", id, "--key", "k2", "--description", "d", "--value", `"v"`)
	select {
	case <-d.Done():
		t.Fatalf("the daemon exited on the read-only filesystem:\n%s", d.Log)
	default:
	}

	// The administrator stops the daemon and the agents, repairs the
	// filesystem and starts the daemon again.
	a.pause(t)
	a.setFault("mending")
	stopDaemon(t, d)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	repairExt4(t, mnt)
	a.setFault("none")
	a.paused.Store(false)
	recs, _ := a.finish(t, id, mine, reserved, subs)
	seen := checkFailures(t, a.failures())
	if seen["read-only"] == 0 {
		t.Errorf("no command failed on the read-only filesystem")
	}
	t.Logf("failures by fault: %v; %d markers written, %d journaled", seen, len(a.wrote.snapshot()), len(recs))
}

// readsGoOn runs the read-only commands on the read-only filesystem:
// each succeeds and shows the task.
func readsGoOn(t *testing.T, w *clitest.WS, id string) {
	t.Helper()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "list"}, id},
		{[]string{"state", "show", "--task", id}, "executing"},
		{[]string{"env", "list", "--task", id}, "k"},
		{[]string{"env", "get", "--task", id, "--key", "k"}, "v"},
		{[]string{"events", "--task", id}, "plan_approved"},
	} {
		if out := w.Ok(c.args...); !strings.Contains(out, c.want) {
			t.Errorf("workspaced %q on the read-only filesystem: want %q in:\n%s", c.args, c.want, out)
		}
	}
	dir := filepath.Join(t.TempDir(), "export")
	w.Ok("export", "--to", dir)
	if _, err := os.Stat(filepath.Join(dir, "tasks", id, "plan.json")); err != nil {
		t.Errorf("export on the read-only filesystem: %v", err)
	}
}

// stopDaemon stops the daemon as a service manager does, with SIGTERM,
// and checks it exits within a minute without a panic.
func stopDaemon(t *testing.T, d *clitest.Daemon) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the daemon did not exit a minute after SIGTERM:\n%s", d.Log)
	}
	if l := d.Log.String(); strings.Contains(l, "panic") || strings.Contains(l, "goroutine ") {
		t.Fatalf("the daemon on SIGTERM:\n%s", l)
	}
}

// stopIdle stops the daemon (SIGSTOP) at a moment it holds no write
// transaction and no place in the write queue (the flock of <db>.write
// that writers take before SQLite's lock), so that the agents' writes go
// on without it: stopped holding either, it would block them all.
func stopIdle(t *testing.T, d *clitest.Daemon, db string) {
	t.Helper()
	probe, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(200)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	queue, err := os.OpenFile(db+".write", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer queue.Close()
	eventually(t, "the daemon stopped between two writes", func() (bool, string) {
		if err := procstop.Stop(d.Cmd.Process, time.Minute); err != nil {
			t.Fatal(err)
		}
		err := unix.Flock(int(queue.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			err = unix.Flock(int(queue.Fd()), unix.LOCK_UN)
		}
		if err == nil {
			var tx *sql.Tx
			if tx, err = probe.BeginTx(t.Context(), nil); err == nil {
				return tx.Rollback() == nil, "rollback"
			}
		}
		if err := d.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return false, err.Error()
	})
}

// panelHas gets url from the panel and checks it answers 200 with want in
// its body.
func panelHas(t *testing.T, url, want string) {
	t.Helper()
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("GET %s: %s, %v, want 200 with %s:\n%s", url, resp.Status, err, want, body)
	}
}
