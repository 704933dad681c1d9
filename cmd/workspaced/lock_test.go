package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/locking"
)

// await is poll.Until, for 10 s, of a condition that says nothing more.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, func() (bool, string) { return cond(), "not yet" })
}

// 8 processes storing different keys at once all land; 8 storing the same
// key all count.
func TestConcurrentStores(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	const procs, each = 8, 5
	clitest.Parallel(t, procs, func(p int) error {
		for i := range each {
			key := fmt.Sprintf("k%d_%d", p, i)
			r, err := clitest.Exec(w.Dir, w.Env, "", "env", "store", "--task", "t1", "--key", key, "--description", "d",
				"--value", fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))
			if err != nil || r.Code != 0 {
				return fmt.Errorf("store %s: %v %v", key, err, r)
			}
		}
		r, err := clitest.Exec(w.Dir, w.Env, "", "env", "store", "--task", "t1", "--key", "same", "--description", "d", "--value", strconv.Itoa(p))
		if err != nil || r.Code != 0 {
			return fmt.Errorf("store same: %v %v", err, r)
		}
		return nil
	})
	var items []entryMeta
	clitest.Decode(t, w.Ok("env", "list", "--task", "t1", "--json"), &items)
	if len(items) != procs*each+1 {
		t.Fatalf("%d keys listed, want %d", len(items), procs*each+1)
	}
	for p := range procs {
		for i := range each {
			want := fmt.Sprintf("{\n  \"p\": %d,\n  \"i\": %d\n}\n", p, i)
			if got := w.Ok("env", "get", "--task", "t1", "--key", fmt.Sprintf("k%d_%d", p, i)); got != want {
				t.Fatalf("k%d_%d = %q, want %q", p, i, got, want)
			}
		}
	}
	var same struct{ Version int }
	clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", "same", "--json"), &same)
	if same.Version != procs {
		t.Fatalf("version of a key stored by %d processes: %d", procs, same.Version)
	}
}

func TestLockCommand(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
	}{
		{"exit code passed through", []string{"sh", "-c", "echo in; exit 7"}, "", 7, "in\n"},
		{"stdin passed through", []string{"sh", "-c", "tr a-z A-Z"}, "hello\n", 0, "HELLO\n"},
		{"root exported", []string{"sh", "-c", `test "$WORKSPACE_ROOT" = "` + w.Root + `" && echo same`}, "", 0, "same\n"},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, "", 128 + 15, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.T = t
			r := w.RunIn(c.stdin, append([]string{"lock", "--task", "t1", "--name", "k", "--"}, c.args...)...)
			if r.Code != c.code || r.Stdout != c.stdout || r.Stderr != "" {
				t.Fatalf("want exit %d and %q, got %v", c.code, c.stdout, r)
			}
		})
	}
	w.T = t
	r := w.Run("lock", "--task", "t1", "--name", "k", "--", "no-such-command-xyz")
	if r.Code != 127 || !strings.Contains(r.Stderr, "no-such-command-xyz") {
		t.Fatalf("a missing command: %v", r)
	}
	w.Fails(exitNotFound, "no such task", "lock", "--task", "nope", "--name", "k", "--", "true")
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", "nope")); err == nil {
		t.Fatal("lock of a missing task created its directory")
	}

	// Held by someone else: --timeout gives up with exit 4 naming the holder,
	// and so does lock_timeout from workspace.json.
	path := filepath.Join(w.Root, "tasks", "t1", ".locks", "k.lock")
	l, err := locking.Acquire(context.Background(), path, locking.Options{Agent: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	holder := fmt.Sprintf("held by pid %d (agent holder)", os.Getpid())
	r = w.Fails(exitConflict, holder, "lock", "--task", "t1", "--name", "k", "--timeout", "200ms", "--", "echo", "never")
	if !strings.Contains(r.Stderr, "hint: ") {
		t.Fatalf("no hint: %v", r)
	}
	settings := filepath.Join(w.Root, "workspace.json")
	data, _ := os.ReadFile(settings)
	os.WriteFile(settings, regexp.MustCompile(`"lock_timeout": "[^"]*"`).ReplaceAll(data, []byte(`"lock_timeout": "200ms"`)), 0o644)
	w.Fails(exitConflict, holder, "lock", "--task", "t1", "--name", "k", "--", "echo", "never")
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1") // other locks are free
	l.Release()
}

// A process killed while holding a lock does not block the next: the kernel
// drops the flock, and the command it ran dies with it.
func TestLockHolderKilled(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	pidFile := filepath.Join(w.Dir, "child.pid")
	cmd := clitest.Command("lock", "--task", "t1", "--name", "k", "--agent", "victim", "--",
		"sh", "-c", `echo $$ > "$0"; exec sleep 60`, pidFile)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	path := filepath.Join(w.Root, "tasks", "t1", ".locks", "k.lock")
	var child int
	await(t, "the child to start under the lock", func() bool {
		data, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		held, _, _ := locking.Held(path)
		return child > 0 && held
	})

	// locks reports it, with the holder.
	var locks []lockInfo
	clitest.Decode(t, w.Ok("locks", "--json"), &locks)
	found := false
	for _, l := range locks {
		if l.Path == "tasks/t1/.locks/k.lock" {
			found = l.Held && l.Holder != nil && l.Holder.PID == cmd.Process.Pid && l.Holder.Agent == "victim"
		}
	}
	if !found {
		t.Fatalf("locks --json does not show the held lock: %+v", locks)
	}
	text := w.Ok("locks")
	if !regexp.MustCompile(`(?m)^tasks/t1/\.locks/k\.lock\s+held\s+pid ` + strconv.Itoa(cmd.Process.Pid) + ` agent victim since `).MatchString(text) {
		t.Fatalf("locks:\n%s", text)
	}
	w.Fails(exitConflict, fmt.Sprintf("held by pid %d (agent victim)", cmd.Process.Pid),
		"lock", "--task", "t1", "--name", "k", "--timeout", "100ms", "--", "true")

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) {
		t.Fatalf("killed holder: %v", err)
	}
	r := w.Run("lock", "--task", "t1", "--name", "k", "--timeout", "5s", "--", "echo", "next")
	if r.Code != 0 || r.Stdout != "next\n" {
		t.Fatalf("the next lock after a killed holder: %v", r)
	}
	await(t, "the orphaned command to die with its workspaced", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
	if got := w.Ok("locks"); !strings.HasPrefix(got, "no lock is held") {
		t.Fatalf("locks after release: %q", got)
	}
}

// events --follow prints what exists, then what is appended, until SIGINT.
func TestEventsFollow(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	cmd := clitest.Command("events", "--follow", "--json")
	cmd.Dir, cmd.Env = w.Dir, w.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		buf := make([]byte, 0, 4096)
		tmp := make([]byte, 4096)
		for {
			n, err := out.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for {
				i := strings.IndexByte(string(buf), '\n')
				if i < 0 {
					break
				}
				lines <- string(buf[:i])
				buf = buf[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || !strings.Contains(l, want) {
				t.Fatalf("next event line %q, want one with %q", l, want)
			}
			var ev map[string]any
			clitest.Decode(t, l, &ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event with %q", want)
		}
	}
	next(`"event":"task_created","task_id":"t1"`)
	w.Ok("env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value", "1")
	next(`"event":"env_stored"`)
	w.Task("t2") // a task created while following is picked up
	next(`"task_id":"t2"`)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("events --follow after SIGINT: %v\n%s", err, stderr.String())
	}
}
