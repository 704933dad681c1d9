package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestBackupRestoreWhileServing: backup list shows the states the daemon
// replaced; restore refuses while a daemon holds PATH.lock (exit 4,
// naming its pid) unless --force, goes through once it is gone, and the
// next daemon brings the restored state forward by the journal.
func TestBackupRestoreWhileServing(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	d := w.Serve()
	st := runFlow(t, w, "t1")

	var backups []struct {
		Name       string `json:"name"`
		JournalSeq int64  `json:"journal_seq"`
		Valid      bool   `json:"valid"`
	}
	clitest.Decode(t, w.Ok("backup", "list", "--task", "t1", "--json"), &backups)
	if len(backups) == 0 || !backups[0].Valid || backups[0].JournalSeq >= st.JournalSeq {
		t.Fatalf("backup list: %+v (state at seq %d)", backups, st.JournalSeq)
	}
	w.Fails(4, fmt.Sprintf("a daemon (pid %d) is serving this root", d.Cmd.Process.Pid), "backup", "restore", "--task", "t1")
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("a refused restore changed the state: %s", out)
	}
	d.Kill()
	if out := w.Ok("backup", "restore", "--task", "t1", "--file", backups[0].Name); !strings.Contains(out, "restored") || !strings.Contains(out, backups[0].Name) {
		t.Errorf("backup restore: %s", out)
	}
	if got := waitState(t, w, "t1", func(workspace.State) bool { return true }); got.JournalSeq != backups[0].JournalSeq {
		t.Errorf("restored state at seq %d, want %d", got.JournalSeq, backups[0].JournalSeq)
	}
	w.Serve()
	w.Ok("claim", "--task", "t1", "--subtask", "s2", "--agent", "w2")
	got := waitState(t, w, "t1", func(st workspace.State) bool {
		return st.Subtasks["s2"] != nil && st.Subtasks["s2"].Status == "in_progress"
	})
	if got.Subtasks["s1"].Status != "completed" || got.JournalSeq != st.JournalSeq+1 {
		t.Errorf("the state after a restore and a marker: s1 %s, seq %d, want completed, %d", got.Subtasks["s1"].Status, got.JournalSeq, st.JournalSeq+1)
	}
	if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
		t.Errorf("state rebuild after the restore: %s", out)
	}
	w.Ok("backup", "restore", "--task", "t1", "--force")
}

// TestEventsFollow: events --follow prints the events so far, then each
// new one the daemon or an agent appends, until it is interrupted.
func TestEventsFollow(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := clitest.CommandContext(ctx, "events", "--follow", "--task", "t1")
	cmd.Dir, cmd.Env = w.Dir, w.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("events --follow ended before %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("events --follow never printed %q", want)
			}
		}
	}
	await("task_created t1")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", `{"a":1}`, "--agent", "w1")
	await("env_stored")
	w.Ok("claim", "--task", "t1", "--subtask", "s1", "--agent", "w1")
	await("claim")
	cancel()

	// Without --task: every task's events, new tasks picked up.
	all := clitest.Command("events", "--follow")
	all.Dir, all.Env = w.Dir, w.Env
	out, err = all.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := all.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = all.Process.Kill(); _ = all.Wait() }()
	lines = make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await("task_created t1")
	w.Task("t2")
	await("task_created t2")
}

// TestLocks: locks names the daemon holding PATH.lock; lock -- CMD runs
// commands one at a time under a task's named lock (none of 24
// read-increment-write rounds of 4 processes is lost), and a timeout
// exits 4 naming the holder.
func TestLocks(t *testing.T) {
	t.Parallel()
	w, db := clitest.NewSQLite(t)
	w.Task("t1")
	d := w.Serve()
	var locks []struct {
		Path   string `json:"path"`
		Held   bool   `json:"held"`
		Holder *struct {
			PID int `json:"pid"`
		} `json:"holder"`
	}
	clitest.Decode(t, w.Ok("locks", "--json"), &locks)
	if len(locks) == 0 || locks[0].Path != "daemon" || !locks[0].Held || locks[0].Holder == nil || locks[0].Holder.PID != d.Cmd.Process.Pid {
		t.Errorf("locks: %+v", locks)
	}

	counter := filepath.Join(t.TempDir(), "n")
	if err := os.WriteFile(counter, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	const procs, rounds = 4, 6
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			for range rounds {
				r := w.Run("lock", "--task", "t1", "--name", "counter", "--agent", "p"+strconv.Itoa(p), "--",
					"sh", "-c", `n=$(cat "$0"); sleep 0.01; echo $((n+1)) > "$0"; test "$WORKSPACE_ROOT" = "$1"`, counter, w.Root)
				if r.Code != 0 {
					t.Errorf("lock -- CMD: %v", r)
				}
			}
		})
	}
	wg.Wait()
	if b, _ := os.ReadFile(counter); strings.TrimSpace(string(b)) != strconv.Itoa(procs*rounds) {
		t.Errorf("counter %q after %d locked increments", b, procs*rounds)
	}
	if r := w.Run("lock", "--task", "t1", "--name", "counter", "--", "sh", "-c", "exit 7"); r.Code != 7 {
		t.Errorf("lock -- exit 7: %v", r)
	}

	s := openDB(t, "sqlite:"+db)
	l, err := s.LockTaskNamed(context.Background(), "t1", "counter", "holder_x")
	if err != nil {
		t.Fatal(err)
	}
	w.Fails(4, "agent holder_x", "lock", "--task", "t1", "--name", "counter", "--timeout", "200ms", "--", "true")
	if out := w.Ok("locks"); !strings.Contains(out, "tasks/t1/.locks/counter.lock") || !strings.Contains(out, "agent holder_x") {
		t.Errorf("locks while the test holds counter:\n%s", out)
	}
	l.Release()
	w.Ok("lock", "--task", "t1", "--name", "counter", "--timeout", "5s", "--", "true")
	w.Fails(3, "no such task", "lock", "--task", "nope", "--name", "counter", "--", "true")
}

// TestCleanupAndFriction: friction add, list and resolve; cleanup keeps an
// active task, summarises a finished one, removes one past summary_days,
// and anonymises the removed task in the friction log.
func TestCleanupAndFriction(t *testing.T) {
	t.Parallel()
	w, db := clitest.NewSQLite(t)
	for _, id := range []string{"t1", "t2", "t3"} {
		w.Task(id)
	}
	w.Serve()
	id := strings.TrimSpace(w.Ok("friction", "add", "--type", "worker_failure", "--task", "t3", "--description", "solver times out", "--agent", "w1"))
	if r := w.Run("friction", "add", "--type", "worker_failure", "--task", "t2", "--description", "Solver  times out", "--agent", "w2"); r.Code != 0 ||
		strings.TrimSpace(r.Stdout) != id || !strings.Contains(r.Stderr, "2 occurrences") {
		t.Errorf("the same friction twice: %v", r)
	}
	for _, tid := range []string{"t2", "t3"} {
		w.Ok("task", "cancel", "--task", tid, "--reason", "not needed", "--wait", "60s")
	}
	s := openDB(t, "sqlite:"+db)
	old := time.Now().UTC().AddDate(0, 0, -40).Format("2006-01-02T15:04:05.000Z")
	if _, err := s.DB().Exec(`UPDATE states SET doc = json_set(doc, '$.completed_at', ?) WHERE task_id = 't3'`, old); err != nil {
		t.Fatal(err)
	}
	dry := w.Ok("cleanup", "--dry-run", "--full-days", "0", "--summary-days", "30")
	if !strings.Contains(dry, "dry run") || !strings.Contains(dry, "1 kept, 1 summarized, 1 removed") {
		t.Errorf("cleanup --dry-run:\n%s", dry)
	}
	if out := w.Ok("task", "list"); !strings.Contains(out, "t3") {
		t.Errorf("a dry run removed t3:\n%s", out)
	}
	if out := w.Ok("cleanup", "--full-days", "0", "--summary-days", "30"); !strings.Contains(out, "1 kept, 1 summarized, 1 removed") {
		t.Errorf("cleanup:\n%s", out)
	}
	w.Fails(3, "no such task", "task", "show", "--task", "t3")
	if out := w.Ok("state", "rebuild", "--task", "t2"); !strings.Contains(out, "summarised") {
		t.Errorf("state rebuild of a summarised task:\n%s", out)
	}
	var e struct {
		Tasks       []string `json:"affected_tasks"`
		Occurrences int      `json:"occurrences"`
	}
	clitest.Decode(t, w.Ok("friction", "show", id, "--json"), &e)
	if e.Occurrences != 2 || len(e.Tasks) != 2 || strings.Contains(strings.Join(e.Tasks, " "), "t3") {
		t.Errorf("friction entry after t3 was removed: %+v", e)
	}
	w.Ok("friction", "resolve", id, "--status", "applied")
	if out := w.Ok("friction", "list", "--status", "applied"); !strings.Contains(out, id) {
		t.Errorf("friction list --status applied:\n%s", out)
	}
	var rep json.RawMessage
	clitest.Decode(t, w.Ok("cleanup", "--json", "--full-days", "0", "--summary-days", "30"), &rep)
}

// TestServeStrictLocal: serve --strict leads on a database on a local
// filesystem (on NFS, SMB or FUSE it would refuse: workspace/sqlite's
// TestLeadStrict).
func TestServeStrictLocal(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve("--strict")
	waitState(t, w, "t1", func(st workspace.State) bool { return st.Status != "" })
}
