package files_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Faults and scale: the daemon rescanning thousands of tasks while cleanup
// removes them, and the daemon short of inotify watches.

// comeback watches tasks/ and records every directory of the tasks ids
// made again after it left tasks/ (renamed away or removed), even one that
// is gone again by the time the test looks. (A summarised task's directory
// is exchanged for its summary, which leaves and enters under the same
// name: only tasks to be removed are followed.)
type comeback struct {
	w    *fsnotify.Watcher
	done chan struct{}
	ids  map[string]bool

	mu       sync.Mutex
	left     map[string]bool // ids whose directory left tasks/
	back     map[string]int  // ids made again after leaving, and how often
	overflow bool            // the watch lost events: only the final look counts
}

func watchComebacks(t *testing.T, tasksDir string, ids []string) *comeback {
	t.Helper()
	fw, err := fsnotify.NewBufferedWatcher(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Add(tasksDir); err != nil {
		fw.Close()
		t.Fatal(err)
	}
	c := &comeback{w: fw, done: make(chan struct{}), ids: map[string]bool{}, left: map[string]bool{}, back: map[string]int{}}
	for _, id := range ids {
		c.ids[id] = true
	}
	go func() {
		defer close(c.done)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				id := filepath.Base(ev.Name)
				if !c.ids[id] {
					continue
				}
				c.mu.Lock()
				switch {
				case ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove):
					c.left[id] = true
				case ev.Has(fsnotify.Create) && c.left[id]:
					c.back[id]++
				}
				c.mu.Unlock()
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					c.mu.Lock()
					c.overflow = true
					c.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *comeback) close() {
	c.w.Close()
	<-c.done
}

// TestServeCleanupRescans runs retention over 3,000 tasks, 2,000 of them
// finished long ago, while the daemon rescans the tree every 200 ms, once
// with `workspaced cleanup` and once with the daemon's own cleanup. No
// removed task's directory may come back, not even for a moment and not
// even empty with a .locks/ (a rescan that had listed it before it was
// removed, locking it); a removed id can be created again; status counts
// only the tasks left.
func TestServeCleanupRescans(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3,000 tasks: long")
	}
	const (
		day       = 24 * time.Hour
		removeN   = 2000 // finished 60 days ago: removed
		summaryN  = 300  // finished 15 days ago: summarised
		keepN     = 400  // finished 2 days ago: kept whole
		executing = 300  // active: never touched
	)
	for _, c := range []struct {
		name string
		own  bool // the daemon's --cleanup-interval rather than the command
	}{{"cleanup command", false}, {"daemon's own cleanup", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := clitest.NewDir(t)
			now := time.Now()
			step := stepTimer(t)
			var gs []clitest.GenTask
			var removed []string
			add := func(prefix string, n int, status string, age time.Duration) {
				for i := range n {
					gs = append(gs, clitest.GenTask{ID: fmt.Sprintf("%s-%04d", prefix, i), Status: status, Age: age})
					if prefix == "old" {
						removed = append(removed, gs[len(gs)-1].ID)
					}
				}
			}
			add("old", removeN, vocab.StatusCompleted, 60*day)
			add("mid", summaryN, vocab.StatusCompleted, 15*day)
			add("new", keepN, vocab.StatusCompleted, 2*day)
			add("run", executing, vocab.StatusExecuting, time.Hour)
			clitest.WriteGenTasks(t, w.Root, gs, now)
			left := summaryN + keepN + executing
			step("tree written")

			cb := watchComebacks(t, filepath.Join(w.Root, "tasks"), removed)
			interval := "0"
			if c.own {
				interval = "1s"
			}
			srv := start(w, "--rescan", "200ms", "--cleanup-interval", interval, "--log-level", "info")
			if l := w.AwaitServing(); l.Tasks != removeN+left {
				t.Fatalf("the daemon knows %d tasks after its start-up scan, want %d", l.Tasks, removeN+left)
			}
			step("daemon ready")

			if c.own {
				// Every run logs what it did; the first removes what it
				// can, any later one what was busy then.
				clitest.Eventually(t, "the daemon's cleanup to remove every old task", func() (bool, string) {
					n := cleanupRemoved(srv.Log.String())
					return n >= removeN, fmt.Sprintf("%d removed so far", n)
				})
				if n := cleanupRemoved(srv.Log.String()); n != removeN {
					t.Errorf("the daemon's cleanup runs removed %d tasks in all, want %d", n, removeN)
				}
			} else {
				var rep retention.Report // of `cleanup --json`
				clitest.Decode(t, w.Ok("cleanup", "--json"), &rep)
				if len(rep.Removed) != removeN || len(rep.Summarized) != summaryN || len(rep.Kept) != keepN+executing ||
					len(rep.Skipped) != 0 || len(rep.Errors) != 0 {
					t.Fatalf("cleanup: %d removed, %d summarised, %d kept, skipped %v, errors %v; want %d, %d, %d and none",
						len(rep.Removed), len(rep.Summarized), len(rep.Kept), rep.Skipped, rep.Errors, removeN, summaryN, keepN+executing)
				}
			}
			step("cleanup done")
			// Rescans that may have listed the removed tasks end, and a few
			// more run over the tree as cleanup left it.
			w.AwaitRescans(3)
			step("three rescans")

			for _, id := range removed {
				if _, err := os.Lstat(filepath.Join(w.Root, "tasks", id)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("removed task %s exists again (%v)", id, err)
				}
			}
			ents, err := os.ReadDir(filepath.Join(w.Root, "tasks"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") && e.Name() != ".locks" {
					t.Errorf("cleanup left tasks/%s behind", e.Name())
				}
			}
			if len(ents) != left+1 { // and tasks/.locks
				t.Errorf("tasks/ holds %d entries, want the %d tasks left and .locks", len(ents), left)
			}
			cb.mu.Lock()
			if len(cb.left) != removeN && !cb.overflow {
				t.Errorf("the watch on tasks/ saw %d old task directories leave, want %d", len(cb.left), removeN)
			}
			for id, n := range cb.back {
				t.Errorf("task directory %s was made again %d times after it left tasks/", id, n)
			}
			if cb.overflow {
				t.Log("the watch on tasks/ overflowed: only the final look at the tree counts")
			}
			cb.mu.Unlock()

			// A removed id is free again, and the daemon serves it.
			again := removed[len(removed)/2]
			if got := strings.TrimSpace(w.Ok("task", "create", "--id", again, "--description", "made again after cleanup")); got != again {
				t.Fatalf("task create --id %s printed %q", again, got)
			}
			clitest.StateWhere(t, w.Open(), again, func(st workspace.State) bool { return st.TaskID == again })

			clitest.Eventually(t, "the daemon to count only the tasks left", func() (bool, string) {
				l := w.LiveNow()
				return l.Tasks == left+1, fmt.Sprintf("the daemon knows %d tasks, want %d", l.Tasks, left+1)
			})
			s := w.StatusJSON()
			if len(s.Tasks) != left+1 || s.ByStatus[vocab.StatusCompleted] != summaryN+keepN || s.ByStatus[vocab.StatusExecuting] != executing {
				t.Errorf("status: %d tasks %v, want %d: %d completed, %d executing and the new one",
					len(s.Tasks), s.ByStatus, left+1, summaryN+keepN, executing)
			}
			if s.Live == nil || s.Live.Tasks != left+1 || s.Live.Degraded() || len(s.Live.Refused) != 0 {
				t.Errorf("status live = %+v, want %d tasks, nothing stopped, unwatched or refused", s.Live, left+1)
			}
			if strings.Contains(srv.Log.String(), "level=ERROR") {
				t.Errorf("the daemon logged errors:\n%s", clitest.TailLines(srv.Log.String(), 20))
			}
			step("checked")
			srv.Stop()
			step("daemon stopped")
		})
	}
}

var cleanupDoneRE = regexp.MustCompile(`msg="cleanup done".* removed=(\d+)`)

// cleanupRemoved sums the tasks the daemon's cleanup runs say they removed.
func cleanupRemoved(log string) int {
	n := 0
	for _, m := range cleanupDoneRE.FindAllStringSubmatch(log, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// stepTimer logs how long each step of a long test took.
func stepTimer(t *testing.T) func(string) {
	last := time.Now()
	return func(what string) {
		t.Helper()
		t.Logf("%s in %v", what, time.Since(last).Round(time.Millisecond))
		last = time.Now()
	}
}
