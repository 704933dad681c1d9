package missed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// TestServeMissedEvents: markers dropped while no daemon runs, a task
// directory that arrives with its marker inside, and a burst larger than
// the inotify queue are all applied, each exactly once.
func TestServeMissedEvents(t *testing.T) {
	w := clitest.NewDir(t)
	x := w.Open()

	// Markers dropped while no daemon runs are taken on start.
	if err := fixture.PrepareTask(context.Background(), x, "down", 3); err != nil {
		t.Fatal(err)
	}
	srv := start(w)
	clitest.StateWhere(t, x, "down", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	srv.Stop()
	if err := fixture.ApprovePlan(t.Context(), x, "down"); err != nil {
		t.Fatal(err)
	}
	if out := w.Ok("status"); !strings.Contains(out, "markers waiting: 1") {
		t.Errorf("status with a marker waiting and no daemon:\n%s", out)
	}
	srv = start(w)
	clitest.StateWhere(t, x, "down", func(st workspace.State) bool { return st.Status == "executing" })
	srv.Stop()
	for s := 1; s <= 3; s++ {
		sub := fmt.Sprintf("st_%d", s)
		if _, err := x.WriteOutput(t.Context(), "down", sub, "w1", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := x.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "down", Agent: "w1", OutputFile: "outputs/" + sub + ".json"}); err != nil {
			t.Fatal(err)
		}
	}
	// From here on no rescan comes in time to find what the wake-ups
	// miss: the burst's markers are found by the full look the overflow
	// asks for, or not at all.
	srv = start(w, "--rescan", "1h")
	clitest.StateWhere(t, x, "down", func(st workspace.State) bool { return st.Status == "completed" })

	// A task directory that arrives with its marker already inside.
	other := filepath.Join(w.Dir, "other")
	ox, err := files.Init(other, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ox.Close()
	if err := fixture.PrepareTask(context.Background(), ox, "arrived", 2); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, "tasks", "arrived"), filepath.Join(w.Root, "tasks", "arrived")); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "arrived", func(st workspace.State) bool { return st.PlanStatus == "proposed" && st.JournalSeq == 1 })

	// A burst larger than the inotify queue loses nothing. The daemon is
	// stopped (SIGSTOP: a daemon given no CPU) while the agents write, so
	// nothing reads the queue and it overflows whatever the machine's
	// speed: first the temp files of writes that come to nothing fill it
	// (each made and removed, two events), then the markers are dropped,
	// and the kernel drops every event of theirs. The daemon must say the
	// queue overflowed, then find every marker by a full scan.
	const burstTasks, perTask = 10, 20
	for i := 0; i < burstTasks; i++ {
		clitest.ExecutingTask(t, x, fmt.Sprintf("burst%d", i), perTask)
	}
	if err := srv.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	noise := filepath.Join(w.Root, "tasks", "burst0", ".tmp-noise")
	for range inotifyQueue(t)/2 + 1 {
		if err := os.WriteFile(noise, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(noise); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().UTC().Format(workspace.TimeFormat)
	var wg sync.WaitGroup
	for i := 0; i < burstTasks; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(w.Root, "tasks", fmt.Sprintf("burst%d", i))
			for s := 1; s <= perTask; s++ {
				// As a quick agent does it: temp file, rename (no fsync).
				name := fmt.Sprintf(".claim.agent_%d.%d", s, s)
				data := fmt.Sprintf(`{"agent_id":"agent_%d","subtask_id":"st_%d","claimed_at":"%s"}`, s, s, at)
				tmp := filepath.Join(dir, ".tmp-"+name)
				if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := srv.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < burstTasks; i++ {
		id := fmt.Sprintf("burst%d", i)
		st := clitest.StateWhere(t, x, id, func(st workspace.State) bool { return st.JournalSeq == int64(2+perTask) })
		for sid, ss := range st.Subtasks {
			if ss.Status != "in_progress" {
				t.Fatalf("task %s: subtask %s is %s, want in_progress", id, sid, ss.Status)
			}
		}
		if len(st.Errors) > 0 {
			t.Fatalf("task %s: %d errors, first %+v", id, len(st.Errors), st.Errors[0])
		}
	}
	if runtime.GOOS == "linux" && !strings.Contains(srv.Log.String(), "the watch queue overflowed") {
		t.Errorf("%d temp files and %d markers written while the daemon was stopped did not overflow the watch queue (the daemon never said so):\n%s", inotifyQueue(t)/2+1, burstTasks*perTask, srv.Log)
	}
	if !srv.Running() {
		t.Fatalf("daemon stopped:\n%s", srv.Log)
	}
	srv.Stop()
	clitest.CheckJournal(t, x, "down")
	for i := 0; i < burstTasks; i++ {
		clitest.CheckJournal(t, x, fmt.Sprintf("burst%d", i))
	}
}

// inotifyQueue is how many events an inotify instance queues before it
// overflows (fs.inotify.max_queued_events; Linux's default when it cannot
// be read).
func inotifyQueue(t *testing.T) int {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		return 16384
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n <= 0 {
		t.Fatalf("fs.inotify.max_queued_events: %q: %v", data, err)
	}
	return n
}
