package files_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture/scale"
)

// BenchmarkServeStartup measures what `workspaced serve` costs from exec
// to its "ready" line over a tree of 20,000 tasks, 1,000 of them executing
// (internal/fixture/scale.Tree, written once, the page cache warm): each
// iteration starts the binary at its defaults, reads /proc/<pid>/stat and
// status when it logs ready, and stops it. Run it with
//
//	go test -run '^$' -bench ServeStartup -benchtime 5x ./e2e/files/
//
// It reports the median over its iterations of the daemon's CPU time,
// user + system (cpu_s_to_ready, and the least, cpu_s_to_ready_min), the
// wall time (s_to_ready), the garbage collections (gcs_to_ready, counted
// from GODEBUG=gctrace=1) and the peak RSS (peak_rss_MiB), and the load
// average when it ended (load1). WORKSPACED_STARTUP_VS names another
// build to compare on the same tree, run alternately with this one
// (vs_cpu_s_to_ready, …); WORKSPACED_SCALE_DIR is where the tree is
// written (default: beside the test binary, in the system's temporary
// directory).
func BenchmarkServeStartup(b *testing.B) {
	root := startupTree(b)
	bins := []string{clitest.Bin()}
	if vs := os.Getenv("WORKSPACED_STARTUP_VS"); vs != "" {
		bins = append(bins, vs)
	}
	runs := make([][]startupRun, len(bins))
	for i := range b.N {
		for k := range bins {
			k = (k + i) % len(bins) // alternate which build goes first
			r := measureStartup(b, bins[k], root)
			runs[k] = append(runs[k], r)
			b.Logf("%s: ready in %s, %s CPU, %d collections, peak RSS %.1f MiB, load %s",
				filepath.Base(bins[k]), round(r.wall), round(r.cpu), r.gcs, float64(r.hwm)/1024, r.load)
		}
	}
	for k, rs := range runs {
		prefix := ""
		if k > 0 {
			prefix = "vs_"
		}
		reportStartup(b, prefix, rs)
	}
	b.ReportMetric(loadAvg1(), "load1")
}

// startupRun is one start measured: exec → "ready" logged.
type startupRun struct {
	wall, cpu time.Duration
	gcs       int
	hwm       int64 // KiB
	load      string
}

// The tree of the start-up benchmark, written once per test process (in
// the directory TestMain removes, unless WORKSPACED_SCALE_DIR says
// elsewhere).
var (
	startupOnce sync.Once
	startupRoot string
	startupErr  error
)

func startupTree(b *testing.B) string {
	b.Helper()
	startupOnce.Do(func() {
		parent := os.Getenv("WORKSPACED_SCALE_DIR")
		if parent == "" {
			parent = filepath.Dir(clitest.Bin())
		}
		dir, err := os.MkdirTemp(parent, "startup-")
		if err != nil {
			startupErr = err
			return
		}
		if parent != filepath.Dir(clitest.Bin()) {
			defer func() {
				if startupErr != nil {
					os.RemoveAll(dir)
				}
			}()
		}
		start := time.Now()
		startupRoot = filepath.Join(dir, "workspace")
		startupErr = scale.Tree{Active: 1000, Finished: 19000}.Write(startupRoot)
		b.Logf("tree of 20,000 tasks written in %s", round(time.Since(start)))
	})
	if startupErr != nil {
		b.Fatal(startupErr)
	}
	return startupRoot
}

// measureStartup starts serve from binary on root, waits for its ready
// line, reads what the process used, and stops it.
func measureStartup(b *testing.B, binary, root string) startupRun {
	b.Helper()
	cmd := exec.Command(binary, "--root", root, "serve")
	cmd.Env = append(startupEnv(), "GODEBUG=gctrace=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	var (
		log   = &clitest.Log{}
		ready = make(chan int, 1) // the collections logged before it
		ended = make(chan struct{})
	)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(ended)
		sc, gcs := bufio.NewScanner(stderr), 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "gc ") {
				gcs++
				continue
			}
			fmt.Fprintln(log, line)
			if strings.Contains(line, "msg=ready") {
				ready <- gcs
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var r startupRun
	select {
	case r.gcs = <-ready:
		r.wall = time.Since(start)
		r.cpu = procCPU(b, cmd.Process.Pid)
		_, r.hwm = procMem(b, cmd.Process.Pid)
		r.load = loadAvg()
	case <-ended:
		_ = cmd.Wait()
		b.Fatalf("%s exited before it was ready:\n%s", binary, log)
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-ended
		_ = cmd.Wait()
		b.Fatalf("%s was not ready after 5 minutes:\n%s", binary, clitest.TailLines(log.String(), 20))
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-ended
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v after SIGTERM:\n%s", binary, err, clitest.TailLines(log.String(), 20))
	}
	if strings.Contains(log.String(), "level=ERROR") || strings.Contains(log.String(), "level=WARN") {
		b.Fatalf("%s warned while starting:\n%s", binary, clitest.TailLines(log.String(), 20))
	}
	return r
}

// startupEnv is the environment serve starts in: the test's, without
// the variables that steer workspaced or Go's garbage collector (serve
// sets its own).
func startupEnv() []string {
	var out []string
	for _, kv := range clitest.CleanEnv() {
		if strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GODEBUG=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// reportStartup reports the median of runs (and the least CPU time).
func reportStartup(b *testing.B, prefix string, runs []startupRun) {
	b.Helper()
	med := func(f func(startupRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	b.ReportMetric(med(func(r startupRun) float64 { return r.cpu.Seconds() }), prefix+"cpu_s_to_ready")
	b.ReportMetric(slices.MinFunc(runs, func(x, y startupRun) int { return int(x.cpu - y.cpu) }).cpu.Seconds(), prefix+"cpu_s_to_ready_min")
	b.ReportMetric(med(func(r startupRun) float64 { return r.wall.Seconds() }), prefix+"s_to_ready")
	b.ReportMetric(med(func(r startupRun) float64 { return float64(r.gcs) }), prefix+"gcs_to_ready")
	b.ReportMetric(med(func(r startupRun) float64 { return float64(r.hwm) / 1024 }), prefix+"peak_rss_MiB")
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

func loadAvg1() float64 {
	var v float64
	fmt.Sscan(loadAvg(), &v)
	return v
}
