package files_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace/files"
)

// The daemon at scale: how long it takes to start over a large tree, what
// it costs while nothing happens, and how long the commands that read the
// whole tree take. Gated: it writes hundreds of thousands of files.
//
//	WORKSPACED_SCALE=20000,100000 go test -run TestServeScale -v -timeout 2h ./e2e/files/
//
// WORKSPACED_SCALE lists the tree sizes (a value of 1, which also runs
// cmd/workspaced's TestCleanupScale, means 20,000); WORKSPACED_SCALE_DIR is where the trees
// are made (default: the system's temporary directory), so that the
// filesystem can be chosen; WORKSPACED_SCALE_IDLE is the idle window
// (default 60s).

// scaleRun is what TestServeScale measured over one tree.
type scaleRun struct {
	tasks, active int
	written       time.Duration // writing the tree
	locked        time.Duration // serve started → the root's lock held
	ready         time.Duration // serve started → "ready" logged
	startCPU      time.Duration // CPU the daemon used until it was quiet
	startIO       procIO        // what it read and wrote until then
	idle          time.Duration // the idle window
	idleCPU       time.Duration // CPU used over it
	idleIO        procIO        // bytes read and written over it
	rss, hwm      int64         // KiB at the end of the window, and the peak
	watches       int           // inotify watches the daemon holds
	stop          time.Duration // SIGTERM → exit
	load          string        // the load average after the idle window
	cmds          []cmdRun
}

// cmdRun is one read-only command run over the tree: the median wall time
// of its runs, and the most memory one took.
type cmdRun struct {
	args   []string
	wall   time.Duration // median
	cpu    time.Duration // user + system of the median run
	maxRSS int64         // KiB, the largest of the runs
	lines  int           // lines printed
}

func TestServeScale(t *testing.T) {
	t.Parallel()
	env := os.Getenv("WORKSPACED_SCALE")
	if env == "" {
		t.Skip("set WORKSPACED_SCALE=20000[,100000] to measure the daemon's start, idle cost and the reading commands over that many tasks")
	}
	var sizes []int
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("WORKSPACED_SCALE=%q: want tree sizes separated by commas", env)
		}
		if n == 1 {
			n = 20000
		}
		sizes = append(sizes, n)
	}
	idle := 60 * time.Second
	if s := os.Getenv("WORKSPACED_SCALE_IDLE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("WORKSPACED_SCALE_IDLE=%q: want a duration", s)
		}
		idle = d
	}
	parent := os.Getenv("WORKSPACED_SCALE_DIR")
	if parent == "" {
		parent = os.TempDir()
	}
	var runs []scaleRun
	for _, n := range sizes {
		runs = append(runs, measureScale(t, parent, n, idle))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "on %s\n\n", fsOf(parent))
	fmt.Fprintln(&b, "| tasks (active) | tree written | lock held | ready | start-up CPU | start-up read / written | idle CPU | % of a core | idle written (write_bytes / wchar) | idle read (rchar) | RSS (peak) | watches | stop | load average |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %d (%d) | %s | %s | %s | %s | %s / %s | %s over %s | %.2f %% | %d B / %d B | %s | %.1f MiB (%.1f MiB) | %d | %s | %s |\n",
			r.tasks, r.active, round(r.written), round(r.locked), round(r.ready), round(r.startCPU),
			mib(r.startIO.readBytes), mib(r.startIO.writeBytes), round(r.idleCPU), round(r.idle),
			100*r.idleCPU.Seconds()/r.idle.Seconds(), r.idleIO.writeBytes, r.idleIO.wchar, mib(r.idleIO.rchar),
			float64(r.rss)/1024, float64(r.hwm)/1024, r.watches, round(r.stop), r.load)
	}
	fmt.Fprintln(&b, "\n| tasks | command | wall (median of 3) | CPU | max RSS | lines |")
	fmt.Fprintln(&b, "|---|---|---:|---:|---:|---:|")
	for _, r := range runs {
		for _, c := range r.cmds {
			fmt.Fprintf(&b, "| %d | `workspaced %s` | %s | %s | %.1f MiB | %d |\n",
				r.tasks, strings.Join(c.args, " "), round(c.wall), round(c.cpu), float64(c.maxRSS)/1024, c.lines)
		}
	}
	t.Logf("the daemon at scale, %s:\n%s", time.Now().UTC().Format("2006-01-02"), b.String())
}

// measureScale writes a tree of n tasks (a quarter of them executing with
// a subtask in progress, the rest completed two days ago), serves it, and
// measures.
func measureScale(t *testing.T, parent string, n int, idle time.Duration) scaleRun {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "workspaced-scale-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		start := time.Now()
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
		t.Logf("%d tasks: tree removed in %s", n, round(time.Since(start)))
	}()
	w := clitest.NewDir(t, dir)
	w.Dir = dir
	// Subtasks in progress stay under their timeouts for the whole run, so
	// that the idle daemon has no friction to record.
	clitest.WriteFileAll(t, filepath.Join(w.Root, "workspace.json"),
		[]byte(`{"friction": {"timeout_low": "720h", "timeout_medium": "720h", "timeout_high": "720h"}}`+"\n"))

	r := scaleRun{tasks: n, active: n / 4, idle: idle}
	gs := make([]clitest.GenTask, n)
	for i := range gs {
		gs[i] = clitest.GenTask{ID: fmt.Sprintf("task-%06d", i), Status: vocab.StatusCompleted, Age: 48 * time.Hour}
		if i%4 == 0 {
			gs[i].Status, gs[i].Age = vocab.StatusExecuting, time.Hour
		}
	}
	start := time.Now()
	clitest.WriteGenTasks(t, w.Root, gs, time.Now())
	r.written = time.Since(start)
	t.Logf("%d tasks: tree written in %s", n, round(r.written))

	// serve, at its defaults (a rescan every 30 s), as a user starts it.
	cmd := clitest.Command("serve")
	cmd.Dir, cmd.Env = w.Dir, w.Env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &clitest.Log{}
	readyAt := make(chan time.Time, 1)
	start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if strings.Contains(sc.Text(), "msg=ready") {
				readyAt <- time.Now()
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	pid := cmd.Process.Pid
	for r.locked == 0 {
		held, _, err := locking.Held(files.LockPath(w.Root))
		switch {
		case err == nil && held:
			r.locked = time.Since(start)
		case time.Since(start) > time.Minute:
			t.Fatalf("%d tasks: the daemon holds no lock after a minute:\n%s", n, log)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case at := <-readyAt:
		r.ready = at.Sub(start)
	case <-exited:
		t.Fatalf("%d tasks: the daemon exited before it was ready:\n%s", n, log)
	case <-time.After(10 * time.Minute):
		t.Fatalf("%d tasks: the daemon was not ready after 10 minutes:\n%s", n, log)
	}
	t.Logf("%d tasks: ready in %s", n, round(r.ready))

	// The start-up is over once the daemon has used no CPU for a second
	// (its journal settles a second after the start-up scan).
	var cpu0 time.Duration
	quietSince, deadline := time.Now(), time.Now().Add(5*time.Minute)
	for last := procCPU(t, pid); time.Since(quietSince) < time.Second; {
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks: the daemon was still busy 5 minutes after it was ready", n)
		}
		time.Sleep(100 * time.Millisecond)
		if c := procCPU(t, pid); c != last {
			last, quietSince = c, time.Now()
		}
		cpu0 = last
	}
	io0 := readProcIO(t, pid)
	r.startCPU, r.startIO = cpu0, io0

	time.Sleep(idle) // the window measured: nothing happens in it
	r.idleCPU = procCPU(t, pid) - cpu0
	io1 := readProcIO(t, pid)
	r.idleIO = procIO{rchar: io1.rchar - io0.rchar, wchar: io1.wchar - io0.wchar,
		readBytes: io1.readBytes - io0.readBytes, writeBytes: io1.writeBytes - io0.writeBytes}
	r.rss, r.hwm = procMem(t, pid)
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		r.load = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	r.watches = len(watchedInodes(t, pid))
	t.Logf("%d tasks: idle %s CPU over %s, %d bytes written (wchar %d)", n, round(r.idleCPU), idle, r.idleIO.writeBytes, r.idleIO.wchar)

	l := w.LiveNow()
	if l.Tasks != n || l.Degraded() || len(l.Refused) != 0 {
		t.Errorf("%d tasks: the daemon reports %+v, want every task served and watched", n, l)
	}
	if r.watches != r.active+1 {
		t.Errorf("%d tasks: the daemon holds %d watches, want tasks/ and the %d active tasks", n, r.watches, r.active)
	}
	// Idle, the daemon has nothing to write: a byte it sends to the disk
	// is a bug. (wchar is only reported: the Go runtime wakes its poller
	// by writing 8 bytes to an eventfd. Time is only reported too: the
	// machine is shared.)
	if r.idleIO.writeBytes != 0 {
		t.Errorf("%d tasks: the idle daemon wrote %d bytes to the disk (wchar %d)", n, r.idleIO.writeBytes, r.idleIO.wchar)
	}

	for _, args := range [][]string{{"task", "list"}, {"status"}, {"events"}} {
		r.cmds = append(r.cmds, timeCommand(t, w, args))
	}
	for _, c := range r.cmds {
		if c.args[0] == "task" && c.lines != n+1 {
			t.Errorf("task list printed %d lines, want a header and %d tasks", c.lines, n)
		}
	}

	start = time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		r.stop = time.Since(start)
	case <-time.After(5 * time.Minute):
		t.Errorf("%d tasks: the daemon did not stop within 5 minutes of SIGTERM", n)
	}
	if strings.Contains(log.String(), "level=ERROR") || strings.Contains(log.String(), "level=WARN") {
		t.Errorf("%d tasks: the daemon warned:\n%s", n, clitest.TailLines(log.String(), 20))
	}
	return r
}

// timeCommand runs the binary with args three times over w, its output
// counted and dropped, and returns the median wall time and the largest
// peak RSS (what /usr/bin/time -v reports, from the same rusage).
func timeCommand(t *testing.T, w *clitest.WS, args []string) cmdRun {
	t.Helper()
	c := cmdRun{args: args}
	type one struct{ wall, cpu time.Duration }
	var runs []one
	for range 3 {
		cmd := clitest.Command(args...)
		cmd.Dir, cmd.Env = w.Dir, w.Env
		lc := &lineCounter{}
		var errb strings.Builder
		cmd.Stdout, cmd.Stderr = lc, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("workspaced %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		wall := time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		runs = append(runs, one{wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())})
		c.maxRSS = max(c.maxRSS, ru.Maxrss)
		c.lines = lc.n
	}
	slices.SortFunc(runs, func(a, b one) int { return int(a.wall - b.wall) })
	c.wall, c.cpu = runs[1].wall, runs[1].cpu
	return c
}

type lineCounter struct{ n int }

func (l *lineCounter) Write(p []byte) (int, error) {
	l.n += strings.Count(string(p), "\n")
	return len(p), nil
}

// procCPU is the user + system CPU time of process pid.
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count the fields
	// from after it. utime and stime are the 14th and 15th fields.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	const hz = 100 // USER_HZ
	return time.Duration(ut+st) * time.Second / hz
}

// procIO is what /proc/<pid>/io counts: bytes passed to read and write
// calls (rchar, wchar: sockets and pipes too), and bytes the process had
// read from and sent to the storage layer (read_bytes, write_bytes).
type procIO struct {
	rchar, wchar, readBytes, writeBytes int64
}

func readProcIO(t *testing.T, pid int) procIO {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	var p procIO
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "rchar":
			p.rchar = n
		case "wchar":
			p.wchar = n
		case "read_bytes":
			p.readBytes = n
		case "write_bytes":
			p.writeBytes = n
		}
	}
	return p
}

// procMem is the resident set of process pid and its peak, in KiB.
func procMem(t testing.TB, pid int) (rss, hwm int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// fsOf names the filesystem holding dir and its mount options, from
// /proc/self/mountinfo (the longest mount point that holds it).
func fsOf(dir string) string {
	abs, _ := filepath.Abs(dir)
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "an unknown filesystem"
	}
	best, desc := "", "an unknown filesystem"
	for line := range strings.Lines(string(data)) {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 2 {
			continue
		}
		mp := f[4]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			opts := f[5]
			if len(g) > 2 {
				opts += "; " + strings.TrimSpace(g[2])
			}
			best, desc = mp, fmt.Sprintf("%s (%s: %s) mounted on %s", g[0], g[1], opts, mp)
		}
	}
	return desc
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
