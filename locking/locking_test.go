package locking

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The test binary re-executes itself as a child process when this variable
// is set; its value selects what the child does.
const childEnv = "LOCKING_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// child runs in a separate process.
//
//	hold PATH:         take the lock, print "locked", block until killed or stdin closes.
//	count PATH:        100 times, take the lock and increment the counter file beside it.
func child(mode, path string) int {
	ctx := context.Background()
	switch mode {
	case "hold":
		l, err := Acquire(ctx, path, Options{Agent: "child", Timeout: time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = l.Release()
		return 0
	case "count":
		for range 100 {
			if err := increment(ctx, path); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// increment reads the counter file next to the lock, adds one and writes it
// back in place: a lost update shows as a final count below the total.
func increment(ctx context.Context, lockPath string) error {
	l, err := Acquire(ctx, lockPath, Options{Timeout: time.Minute})
	if err != nil {
		return err
	}
	defer l.Release()
	counter := filepath.Join(filepath.Dir(lockPath), "counter")
	data, err := os.ReadFile(counter)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644)
}

func startChild(t *testing.T, mode, path string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", path)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewReader(stdout)
}

func TestLockPathFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, want string
	}{
		{"env entry", "env/arc_task.json", "env/.locks/arc_task.json.lock"},
		{"nested", "tasks/t1/plan.json", "tasks/t1/.locks/plan.json.lock"},
		{"bare name", "friction.json", ".locks/friction.json.lock"},
		{"absolute", "/w/friction/friction.json", "/w/friction/.locks/friction.json.lock"},
		{"unclean", "tasks//t1/./state.json", "tasks/t1/.locks/state.json.lock"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LockPathFor(tc.file); got != tc.want {
				t.Errorf("LockPathFor(%q) = %q, want %q", tc.file, got, tc.want)
			}
		})
	}
}

func TestAcquireWritesHolderAndKeepsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tasks", "t1", ".locks", "task.lock")
	since := time.Date(2024, 1, 15, 10, 0, 0, 123e6, time.UTC)
	l, err := Acquire(context.Background(), path, Options{Agent: "worker_1", Now: func() time.Time { return since }})
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	h, err := ReadHolder(path)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := Holder{PID: os.Getpid(), Agent: "worker_1", Since: since, Host: host}
	if *h != want {
		t.Errorf("holder = %+v, want %+v", *h, want)
	}
	// The record on disk is plain JSON any language can read.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("record is not JSON: %q: %v", raw, err)
	}
	if m["pid"] != float64(os.Getpid()) || m["agent"] != "worker_1" || m["since"] != "2024-01-15T10:00:00.123Z" {
		t.Errorf("record = %s", raw)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&^0o644 != 0 {
		t.Errorf("lock file mode %v, want at most 0644", st.Mode().Perm())
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("lock file gone after Release: %v", err)
	}
	held, h2, err := Held(path)
	if err != nil {
		t.Fatal(err)
	}
	if held {
		t.Error("Held after Release = true")
	}
	if h2 == nil || h2.Agent != "worker_1" {
		t.Errorf("stale holder after Release = %+v, want the last record", h2)
	}
}

func TestShorterRecordReplacesLonger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	for _, agent := range []string{"a-rather-long-agent-name-indeed", "b"} {
		l, err := Acquire(context.Background(), path, Options{Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	raw, _ := os.ReadFile(path)
	var h Holder
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("record after shorter rewrite is not one JSON value: %q: %v", raw, err)
	}
	if h.Agent != "b" {
		t.Errorf("agent = %q, want b", h.Agent)
	}
}

func TestReadHolderErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.lock")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.lock")
	if err := os.WriteFile(garbage, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		want error
	}{
		{"missing", filepath.Join(dir, "none.lock"), fs.ErrNotExist},
		{"empty (flock(1) made it)", empty, ErrNoHolder},
		{"garbage", garbage, ErrNoHolder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHolder(tc.path)
			if !errors.Is(err, tc.want) {
				t.Errorf("ReadHolder error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestHeldDoesNotCreate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.lock")
	held, h, err := Held(path)
	if err != nil || held || h != nil {
		t.Fatalf("Held(missing) = %v, %v, %v", held, h, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Held created the lock file: %v", err)
	}
}

func TestSameProcessExclusion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.lock")
	first, err := Acquire(context.Background(), path, Options{Agent: "first"})
	if err != nil {
		t.Fatal(err)
	}
	held, h, err := Held(path)
	if err != nil {
		t.Fatal(err)
	}
	if !held || h == nil || h.Agent != "first" {
		t.Errorf("Held = %v, %+v; want held by first", held, h)
	}

	_, err = TryAcquire(path, Options{Agent: "second"})
	var te *TimeoutError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &te) {
		t.Fatalf("TryAcquire on a held lock = %v, want ErrLocked", err)
	}
	if te.Waited != 0 || te.Holder == nil || te.Holder.Agent != "first" {
		t.Errorf("TryAcquire error = %+v", te)
	}

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, err := TryAcquire(path, Options{Agent: "second"})
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	defer second.Release()
	if h, _ := ReadHolder(path); h == nil || h.Agent != "second" {
		t.Errorf("holder = %+v, want second", h)
	}
}

func TestGoroutineMutualExclusion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".locks", "counter.lock")
	const workers, rounds = 8, 50
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := Acquire(context.Background(), path, Options{Agent: fmt.Sprint("g", w), Timeout: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				if err := increment(context.Background(), path+".inner"); err != nil {
					errs <- err
				}
				inside.Add(-1)
				if err := l.Release(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxInside.Load(); m != 1 {
		t.Errorf("%d holders were inside at once", m)
	}
}

func TestProcessMutualExclusion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ".locks", "counter.lock")
	const procs = 4
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$", path)
		cmd.Env = append(os.Environ(), childEnv+"=count")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// This process competes too.
	for range 100 {
		if err := increment(context.Background(), path); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ".locks", "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(data)), strconv.Itoa((procs+1)*100); got != want {
		t.Errorf("counter = %s, want %s (an update was lost)", got, want)
	}
}

func TestTimeoutNamesHolder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tasks", "t1", ".locks", "task.lock")
	cmd, out := startChild(t, "hold", path)
	if line, err := out.ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}

	_, err := Acquire(context.Background(), path, Options{Timeout: 20 * time.Millisecond, Poll: time.Millisecond})
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire on a held lock = %v, want *TimeoutError", err)
	}
	if te.Path != path || te.Holder == nil || te.Holder.PID != cmd.Process.Pid || te.Holder.Agent != "child" {
		t.Errorf("error fields = %+v holder %+v, want path %s pid %d agent child", te, te.Holder, path, cmd.Process.Pid)
	}
	if te.Waited < 20*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", te.Waited)
	}
	msg := err.Error()
	for _, want := range []string{"lock " + path, fmt.Sprintf("held by pid %d", cmd.Process.Pid), "(agent child)", "since ", "gave up after"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

func TestKilledHolderReleases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".locks", "task.lock")
	cmd, out := startChild(t, "hold", path)
	if line, err := out.ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	if held, h, err := Held(path); err != nil || !held || h == nil || h.PID != cmd.Process.Pid {
		t.Fatalf("Held = %v, %+v, %v; want held by the child", held, h, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// A deadline, not a threshold: the kernel released the lock with the process.
	l, err := Acquire(context.Background(), path, Options{Timeout: 10 * time.Second, Agent: "next"})
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	defer l.Release()
	if h, _ := ReadHolder(path); h == nil || h.PID != os.Getpid() || h.Agent != "next" {
		t.Errorf("holder = %+v, want this process", h)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.lock")
	held, err := Acquire(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(ctx, path, Options{Timeout: -1})
		done <- err
	}()
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire after cancel = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrLocked) {
		t.Errorf("a cancelled wait reports ErrLocked: %v", err)
	}

	// An already-done context fails before touching the lock.
	if _, err := Acquire(ctx, filepath.Join(t.TempDir(), "b.lock"), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a done context = %v", err)
	}
}

func TestWaiterGetsLockOnRelease(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.lock")
	first, err := Acquire(context.Background(), path, Options{Agent: "first"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), path, Options{Agent: "waiter", Timeout: time.Minute})
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v", err)
	}
}

func TestPrivatePerm(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "private")
	path := filepath.Join(dir, ".locks", "x.lock")
	l, err := Acquire(context.Background(), path, Options{Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
}

// With NoParents a lock in a missing directory fails and makes nothing;
// without, the directory is made. A held lock's descriptor is read-only,
// so it never keeps a filesystem from a read-only remount.
func TestNoParentsAndReadOnlyDescriptor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone", ".locks", "task.lock")
	if _, err := TryAcquire(gone, Options{NoParents: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("TryAcquire with NoParents in a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the missing directory was made: %v", err)
	}
	made := filepath.Join(dir, "made", "x.lock")
	l, err := TryAcquire(made, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	found := false
	for _, e := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || target != made {
			continue
		}
		found = true
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if err != nil {
					t.Fatal(err)
				}
				if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
					t.Errorf("the held lock's descriptor is open for writing (flags %o)", flags)
				}
			}
		}
	}
	if !found {
		t.Fatal("no open descriptor of the held lock")
	}
}

// A check of the lock (Held, as `status` makes) takes a free lock for an
// instant; TryAcquire at that instant must not take it for held, or a
// daemon starting while someone runs `status` would exit as if another
// daemon served.
func TestTryAcquireIsNotFooledByHeld(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probed.lock")
	stop := make(chan struct{})
	var probes sync.WaitGroup
	for range 2 {
		probes.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, _ = Held(path)
			}
		})
	}
	defer func() { close(stop); probes.Wait() }()
	for i := range 300 {
		lk, err := TryAcquire(path, Options{Agent: "daemon"})
		if err != nil {
			t.Fatalf("try %d: TryAcquire of a lock only probed: %v", i, err)
		}
		if err := lk.Release(); err != nil {
			t.Fatal(err)
		}
	}
}
