package files_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// Faults of the filesystem under a running daemon, on a small ext4 image
// loop-mounted for the test (clitest.SmallExt4): a full disk and a read-only
// remount. They need root and a loop device, and skip with a message
// without them.

// settled waits until the daemon has settled task id's journal: no taken
// marker is left beside its record.
func settled(t *testing.T, root, id string) {
	t.Helper()
	clitest.Eventually(t, "the journal of "+id+" settled", func() (bool, string) {
		ents, err := os.ReadDir(filepath.Join(root, "tasks", id, "journal"))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".taken") {
				return false, e.Name()
			}
		}
		return true, ""
	})
}

// A marker the daemon takes while the disk is full cannot be journaled:
// the task stops and is retried, no sequence number is skipped, and once
// space is freed every marker is applied exactly once, within seconds.
// The daemon is stopped (SIGSTOP) while the claim is dropped and the disk
// filled, so that it meets the full disk when it takes the marker.
func TestServeDiskFull(t *testing.T) {
	t.Parallel()
	mnt := clitest.SmallExt4(t, 48<<20)
	w := clitest.NewDir(t, mnt)
	x := w.Open()
	srv := start(w, "--rescan", "1s")
	clitest.ExecutingTask(t, x, "t1", 3)
	before := clitest.StateWhere(t, x, "t1", func(workspace.State) bool { return true })
	// Settled first, so that nothing the daemon removes later frees room
	// on the full disk.
	settled(t, w.Root, "t1")

	if err := srv.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	claim, err := x.WriteClaim(t.Context(), "t1", "w1", "st_1")
	if err != nil {
		t.Fatal(err)
	}
	clitest.Fill(t, mnt)
	filler := filepath.Join(mnt, "filler")
	if err := srv.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, "the daemon to stop task t1 on the full disk", func() (bool, string) {
		why, ok := stoppedTask(w.Live(), "t1")
		return ok, "live: " + why
	})
	why, _ := stoppedTask(w.Live(), "t1")
	if !strings.Contains(why, "no space") {
		t.Errorf("stopped for %q, want the full disk named", why)
	}
	if out := w.Ok("status"); !strings.Contains(out, "degraded: task t1 stopped") || !strings.Contains(out, "hint: the filesystem is full") {
		t.Errorf("status on the full disk does not say t1 is stopped and how to mend it:\n%s", out)
	}
	if st, err := x.ReadState(t.Context(), "t1"); err != nil || st.JournalSeq != before.JournalSeq {
		t.Fatalf("while the disk is full: journal_seq %d (%v), want %d", st.JournalSeq, err, before.JournalSeq)
	}
	// A CLI write fails cleanly and leaves no temporary file.
	r := w.Run("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", `"v"`)
	if r.Code == 0 {
		t.Fatalf("env store on a full disk exited 0")
	}
	if !srv.Running() {
		t.Fatalf("daemon exited on the full disk:\n%s", srv.Log)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	st := clitest.StateWhere(t, x, "t1", func(st workspace.State) bool {
		return st.Subtasks["st_1"] != nil && st.Subtasks["st_1"].Status == "in_progress"
	})
	if st.JournalSeq != before.JournalSeq+1 {
		t.Errorf("after space was freed: journal_seq %d, want %d", st.JournalSeq, before.JournalSeq+1)
	}
	clitest.Eventually(t, "status to stop naming t1", func() (bool, string) {
		why, ok := stoppedTask(w.Live(), "t1")
		return !ok, why
	})
	// The next marker takes the next number.
	if _, err := x.WriteClaim(t.Context(), "t1", "w2", "st_2"); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == before.JournalSeq+2 })
	srv.Stop()
	recs := clitest.CheckJournal(t, x, "t1")
	if recs[before.JournalSeq].File != filepath.Base(claim) || recs[before.JournalSeq].Rejected != "" {
		t.Errorf("record %d = %+v, want the claim taken on the full disk, applied", before.JournalSeq+1, recs[before.JournalSeq])
	}
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("rebuild differs:\n%s", out)
	}
	for _, d := range []string{filepath.Join(w.Root, "tasks", "t1"), filepath.Join(w.Root, "tasks", "t1", "journal")} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp") {
				t.Errorf("temporary file left in %s: %s", d, e.Name())
			}
		}
	}
}

// A read-only remount under a running daemon with markers waiting
// succeeds (the daemon holds nothing open for writing), and once the
// filesystem is read-write again every marker is applied exactly once,
// within seconds rather than at the next rescan.
func TestServeReadOnlyRemount(t *testing.T) {
	t.Parallel()
	mnt := clitest.SmallExt4(t, 48<<20)
	w := clitest.NewDir(t, mnt)
	x := w.Open()
	srv := start(w, "--rescan", "1h") // no rescan comes to the rescue
	clitest.ExecutingTask(t, x, "t1", 3)
	before := clitest.StateWhere(t, x, "t1", func(workspace.State) bool { return true })

	if err := srv.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"st_1", "st_2"} {
		if _, err := x.WriteClaim(t.Context(), "t1", "w_"+sub, sub); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		_ = srv.Cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("remount read-only beside the daemon: %v\n%s", err, out)
	}
	if err := srv.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, "the daemon to stop task t1 on the read-only filesystem", func() (bool, string) {
		why, ok := stoppedTask(w.Live(), "t1")
		return ok, why
	})
	if out, err := exec.Command("mount", "-o", "remount,rw", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount read-write: %v\n%s", err, out)
	}
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == before.JournalSeq+2 })
	srv.Stop()
	clitest.CheckJournal(t, x, "t1")
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("rebuild differs:\n%s", out)
	}
}

// An entry of tasks/ that is a symlink to a task is refused, never
// followed: the task it points to is served under its own id only, its
// state is never rewritten through the link, and status names the entry.
func TestServeRefusesSymlinkedTask(t *testing.T) {
	t.Parallel()
	w := clitest.NewDir(t)
	x := w.Open()
	srv := start(w, "--rescan", "200ms")
	clitest.ExecutingTask(t, x, "v1", 2)
	before := clitest.StateWhere(t, x, "v1", func(workspace.State) bool { return true })
	if err := os.Symlink("v1", filepath.Join(w.Root, "tasks", "alias")); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, "status to name the refused entry", func() (bool, string) {
		l := w.Live()
		if l == nil {
			return false, "no live report"
		}
		for _, id := range l.Refused {
			if id == "alias" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("refused: %v", l.Refused)
	})
	if _, err := x.WriteClaim(t.Context(), "v1", "w1", "st_1"); err != nil {
		t.Fatal(err)
	}
	st := clitest.StateWhere(t, x, "v1", func(st workspace.State) bool { return st.JournalSeq == before.JournalSeq+1 })
	if st.TaskID != "v1" {
		t.Fatalf("state of v1 names task %q", st.TaskID)
	}
	// Rescans later nothing has come through the link.
	since := time.Now()
	clitest.Eventually(t, "two more rescans", func() (bool, string) {
		l := w.Live()
		return l != nil && l.LastRescan.After(since.Add(400*time.Millisecond)), "waiting"
	})
	srv.Stop()
	recs := clitest.CheckJournal(t, x, "v1")
	if len(recs) != int(before.JournalSeq)+1 {
		t.Errorf("%d records in v1's journal, want %d", len(recs), before.JournalSeq+1)
	}
	if !strings.Contains(srv.Log.String(), "task entry refused") || strings.Count(srv.Log.String(), "task entry refused") != 1 {
		t.Errorf("want the refusal logged once; log:\n%s", srv.Log)
	}
}

// Agents keep dropping markers while the disk fills up: the writes that
// meet it fail, the daemon goes on, and once space is freed every marker
// that made it to disk is applied exactly once, in a contiguous journal
// equal to its rebuild.
func TestServeDiskFullUnderLoad(t *testing.T) {
	t.Parallel()
	mnt := clitest.SmallExt4(t, 48<<20)
	w := clitest.NewDir(t, mnt)
	x := w.Open()
	srv := start(w, "--rescan", "1s")
	const subtasks = 40
	clitest.ExecutingTask(t, x, "t1", subtasks)

	stop := make(chan struct{})
	dropped := make(chan string, 2*subtasks)
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		for s := 1; s <= subtasks; s++ {
			select {
			case <-stop:
				return
			default:
			}
			// A write refused for want of space is simply not dropped.
			if name, err := x.WriteClaim(t.Context(), "t1", fmt.Sprintf("w%d", s%5), fmt.Sprintf("st_%d", s)); err == nil {
				dropped <- filepath.Base(name)
			}
			time.Sleep(5 * time.Millisecond) // an agent's pace, not a wait for a condition
		}
	}()
	clitest.Fill(t, mnt)
	filler := filepath.Join(mnt, "filler")
	// The agents go on against the full disk until they are through; the
	// daemon, meanwhile, meets it too and goes on rescanning.
	<-agentDone
	close(stop)
	full := time.Now()
	clitest.Eventually(t, "a rescan on the full disk", func() (bool, string) {
		l := w.Live()
		return l != nil && l.LastRescan.After(full), "no rescan yet"
	})
	if !srv.Running() {
		t.Fatalf("daemon exited on the full disk:\n%s", srv.Log)
	}
	close(dropped)
	var names []string
	for n := range dropped {
		names = append(names, n)
	}
	// (A CLI write on the full disk failing with its hint is
	// TestServeDiskFull's and TestWriteOnFullDisk's: here, settling may
	// have freed a few blocks since the disk filled.)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, "every dropped claim applied", func() (bool, string) {
		st, err := x.ReadState(t.Context(), "t1")
		if err != nil {
			return false, err.Error()
		}
		ents, _ := os.ReadDir(filepath.Join(w.Root, "tasks", "t1"))
		for _, e := range ents {
			if _, ok := workspace.IsMarkerName(e.Name()); ok {
				return false, "marker waiting: " + e.Name()
			}
		}
		_, stopped := stoppedTask(w.Live(), "t1")
		return !stopped, fmt.Sprintf("journal_seq %d, stopped %v", st.JournalSeq, stopped)
	})
	srv.Stop()
	recs := clitest.CheckJournal(t, x, "t1")
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.File] = true
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("claim %s was dropped but never journaled", n)
		}
	}
	if len(names) == 0 {
		t.Error("no claim was dropped at all: the test exercised nothing")
	}
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("rebuild differs:\n%s", out)
	}
}
