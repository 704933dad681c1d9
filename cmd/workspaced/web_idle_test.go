package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWebIdleStreams: 100 pages' streams open on a real `workspaced web`
// while nothing changes. The process's CPU time over three idle seconds
// is reported (it is the kernel's count, in clock ticks); what the test
// asserts is that the streams stay open and still deliver once something
// changes.
func TestWebIdleStreams(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "idle")
	// 100 streams of one address: more than a browser opens, and than
	// the default allows.
	p := w.web("--streams-per-token", "200")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int, 1000)
	for i := range 100 {
		path := "/api/tasks/t1/events"
		if i%2 == 1 {
			path = "/api/events?events=0"
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", p.url+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("stream %d: %v", i, err)
		}
		go func() {
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "event: changed") || strings.HasPrefix(l, "event: task") {
					got <- i
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the streams' first flush
	before := cpuTicks(t, p.cmd.Process.Pid)
	time.Sleep(3 * time.Second)
	idle := cpuTicks(t, p.cmd.Process.Pid) - before
	t.Logf("workspaced web with 100 open streams, idle 3 s: %d clock ticks of CPU (1 tick = 10 ms)", idle)
	w.Ok("env", "store", "--task", "t1", "--agent", "a", "--key", "k", "--description", "d", "--value", "1")
	seen := map[int]bool{}
	deadline := time.After(10 * time.Second)
	for len(seen) < 100 {
		select {
		case i := <-got:
			seen[i] = true
		case <-deadline:
			t.Fatalf("%d of 100 streams heard of the change", len(seen))
		}
	}
}

// cpuTicks is a process's user and system CPU time, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}
