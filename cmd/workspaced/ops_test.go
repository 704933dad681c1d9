package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
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
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// The operations endpoints and metrics of serve, tested on the real
// binary: a known burst of markers and the counters scraped after it,
// promtool's lint of the output and of the example alerts, a real
// Prometheus scraping the daemon, /readyz with a stopped task (through
// the start-up scan of a large tree: e2e/files), and the notify protocol
// on a socket the test listens on.

// sample is the value of the series line (name with its labels, as the
// text format writes them) in a scrape; -1 when absent.
func sample(body, series string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// opsServe starts serve with its endpoints on a port of the loopback.
func (w *ws) opsServe(extra ...string) (*clitest.Daemon, string) {
	w.T.Helper()
	s := w.serve(append([]string{"--listen", "127.0.0.1:0", "--log-level", "info"}, extra...)...)
	return s, s.OpsURL()
}

// opsBurst drives task "burst" through a known burst: the plan proposed
// and approved (2 done markers applied), n claims won by w1, then k
// claims of the same subtasks lost by w2 and n done markers applied. It
// returns the expected counts by kind/verdict.
func opsBurst(t *testing.T, x *files.Store, n, k int) map[string]float64 {
	t.Helper()
	clitest.ExecutingTask(t, x, "burst", n)
	for s := 1; s <= n; s++ {
		sub := fmt.Sprintf("st_%d", s)
		if _, err := x.WriteOutput(context.Background(), "burst", sub, "w1", []byte(`{"summary":"done"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := x.WriteClaim(context.Background(), "burst", "w1", sub); err != nil {
			t.Fatal(err)
		}
	}
	clitest.StateWhere(t, x, "burst", func(st workspace.State) bool { return st.JournalSeq == int64(2+n) })
	for s := 1; s <= n; s++ {
		sub := fmt.Sprintf("st_%d", s)
		if s <= k {
			if _, err := x.WriteClaim(context.Background(), "burst", "w2", sub); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := x.WriteDone(context.Background(), workspace.DoneRequest{TaskID: "burst", Agent: "w1", SubtaskID: sub, OutputFile: "outputs/" + sub + ".json"}); err != nil {
			t.Fatal(err)
		}
	}
	clitest.StateWhere(t, x, "burst", func(st workspace.State) bool { return st.JournalSeq == int64(2+2*n+k) })
	return map[string]float64{
		`workspaced_markers_applied_total{kind="claim",verdict="won"}`:    float64(n),
		`workspaced_markers_applied_total{kind="claim",verdict="lost"}`:   float64(k),
		`workspaced_markers_applied_total{kind="done",verdict="applied"}`: float64(n + 2),
		`workspaced_markers_applied_total{kind="done",verdict="refused"}`: 0,
		`workspaced_commit_markers_sum`:                                   float64(2 + 2*n + k),
		`workspaced_marker_latency_seconds_count`:                         float64(2 + 2*n + k),
		`workspaced_events_lost_total`:                                    0,
		`workspaced_leading`:                                              1,
		`workspaced_ready`:                                                1,
		`workspaced_tasks_stopped{fault="other"}`:                         0,
	}
}

// scrapeUntil scrapes u's /metrics until every series has its value.
func scrapeUntil(t *testing.T, u string, want map[string]float64) string {
	t.Helper()
	var body string
	clitest.Eventually(t, "the metrics of the burst", func() (bool, string) {
		var code int
		code, body = clitest.HTTPGet(u + "metrics")
		if code != http.StatusOK {
			return false, fmt.Sprintf("status %d: %s", code, body)
		}
		for series, v := range want {
			if got := sample(body, series); got != v {
				return false, fmt.Sprintf("%s = %v, want %v", series, got, v)
			}
		}
		return true, ""
	})
	return body
}

func TestOpsMetricsCountBurst(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	x := w.Open()
	srv, u := w.opsServe()
	want := opsBurst(t, x, 24, 8)
	body := scrapeUntil(t, u, want)
	if v := sample(body, "workspaced_events_written_total"); v <= 0 {
		t.Errorf("workspaced_events_written_total = %v, want > 0", v)
	}
	for _, p := range []string{"healthz", "readyz"} {
		if code, b := clitest.HTTPGet(u + p); code != http.StatusOK {
			t.Errorf("/%s: %d %s", p, code, b)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("/metrics lacks %s (the Go and process collectors)", name)
		}
	}
	promtoolCheckMetrics(t, body)
	srv.Stop()
}

// promtool is promtool's path, or the test skips (fails where required).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		optdep.Skip(t, "prometheus", "promtool not found: install Debian's prometheus package (apt-get install prometheus)")
	}
	return p
}

func promtoolCheckMetrics(t *testing.T, body string) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestOpsAlertRulesCheck(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(promtool(t), "check", "rules", filepath.Join("..", "..", "examples", "prometheus", "alerts.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules: %s", out)
	}
}

// freePort is a port of the loopback nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestOpsPrometheusScrapes(t *testing.T) {
	t.Parallel()
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		optdep.Skip(t, "prometheus", "prometheus not found: install Debian's prometheus package (apt-get install prometheus)")
	}
	w := newWS(t)
	x := w.Open()
	_, u := w.opsServe()
	want := opsBurst(t, x, 6, 2)
	target := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: workspaced\n    static_configs:\n      - targets: ['%s']\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen)
	log := &clitest.Log{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	q := "http://" + listen + "/api/v1/query?query=" + url.QueryEscape(`sum(workspaced_markers_applied_total{job="workspaced"})`)
	total := want[`workspaced_commit_markers_sum`]
	clitest.Eventually(t, "Prometheus to hold the applied-markers counter", func() (bool, string) {
		code, body := clitest.HTTPGet(q)
		if code != http.StatusOK {
			return false, fmt.Sprintf("%d %s; prometheus: %s", code, body, log)
		}
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
			return false, body
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		return s == strconv.FormatFloat(total, 'f', -1, 64), body
	})
}

func TestOpsReadyzStoppedTask(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	var set map[string]any
	path := filepath.Join(w.Root, "workspace.json")
	data, _ := os.ReadFile(path)
	_ = json.Unmarshal(data, &set)
	set["lock_timeout"] = "300ms" // the commit of a held task fails soon
	data, _ = json.Marshal(set)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	x := w.Open()
	_, u := w.opsServe()
	clitest.ExecutingTask(t, x, "held", 6)
	clitest.AwaitReadyz(t, u, http.StatusOK, "ready")
	release := clitest.HoldTask(t, x, "held")
	clitest.AwaitReadyz(t, u, http.StatusServiceUnavailable, "degraded: task held stopped")
	clitest.Eventually(t, "the stopped task in the metrics", func() (bool, string) {
		_, body := clitest.HTTPGet(u + "metrics")
		return sample(body, `workspaced_tasks_stopped{fault="other"}`) == 1 && sample(body, `workspaced_commit_failures_total{fault="other"}`) >= 1, body
	})
	release()
	clitest.AwaitReadyz(t, u, http.StatusOK, "ready")
}

func TestOpsServeListenRefusesOffLoopback(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Fails(2, "not a loopback", "serve", "--listen", "0.0.0.0:0")
	w.Fails(2, "go with --listen", "serve", "--token-file", "x")
}

// notifySocket listens on a unixgram socket as systemd does and returns
// its path and the datagrams it receives.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// until reads datagrams until one holds want; it fails on one holding
// never first.
func until(t *testing.T, ch <-chan string, want, never string) string {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("the notify socket closed before %q", want)
			}
			if never != "" && strings.Contains(m, never) {
				t.Fatalf("got %q before %q", m, want)
			}
			if strings.Contains(m, want) {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q on the notify socket", want)
		}
	}
}

func TestOpsNotifyProtocol(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	x := w.Open()
	// No daemon yet: the plan's done marker waits, and so does the claim.
	if err := fixture.PrepareTask(context.Background(), x, "held", 6); err != nil {
		t.Fatal(err)
	}
	sock, ch := notifySocket(t)
	w.Env = append(w.Env, "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	release := clitest.HoldTask(t, x, "held")
	srv := w.serve()
	// While the start-up scan waits for the held task, the loop answers
	// pings: the watchdog is fed, and nothing says ready.
	for range 3 {
		until(t, ch, "WATCHDOG=1", "READY=1")
	}
	release()
	m := until(t, ch, "READY=1", "")
	if !strings.Contains(m, "STATUS=leading") {
		t.Fatalf("READY=1 without the leading status: %q", m)
	}
	for range 3 {
		until(t, ch, "WATCHDOG=1", "")
	}
	_ = srv.Cmd.Process.Signal(syscall.SIGTERM)
	until(t, ch, "STOPPING=1", "")
	srv.Stop()
}

func TestOpsWebAndMCPEndpoints(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	p := w.web()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, b := clitest.HTTPGet(p.url + path); code != http.StatusOK {
			t.Fatalf("web %s: %d %s", path, code, b)
		}
	}
	if code, _ := clitest.HTTPGet(p.url + "/"); code != http.StatusOK {
		t.Fatalf("web /: %d", code)
	}
	body := scrapeUntil(t, p.url+"/", map[string]float64{
		`workspaced_web_requests_total{route="GET /healthz",status="200"}`: 1,
		`workspaced_web_sse_clients`:                                       0,
		`workspaced_mcp_sessions`:                                          0, // web serves /mcp on loopback
	})
	if !strings.Contains(body, `workspaced_web_requests_total{route="GET /{$}",status="200"}`) && !strings.Contains(body, `route="GET /"`) {
		t.Errorf("the panel's page is not counted by its pattern:\n%s", body)
	}
	promtoolCheckMetrics(t, body)

	m := w.mcpHTTP()
	base := strings.TrimSuffix(m.url, "mcp")
	if code, b := clitest.HTTPGet(base + "readyz"); code != http.StatusOK {
		t.Fatalf("mcp --http /readyz: %d %s", code, b)
	}
	resp, err := http.Post(base+"mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request without a token: %d", resp.StatusCode)
	}
	scrapeUntil(t, base, map[string]float64{`workspaced_mcp_refusals_total{reason="no_token"}`: 1, `workspaced_mcp_sessions`: 0})
}

// The dashboard and the alerts name only metrics docs/OPERATIONS.md
// documents, and the dashboard is JSON.
func TestOpsExamplesNameDocumentedMetrics(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile(filepath.Join("..", "..", "examples", "grafana", "workspaced.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(dash, &v); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	alerts, err := os.ReadFile(filepath.Join("..", "..", "examples", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`workspaced_[a-z_]+`)
	for _, src := range [][]byte{dash, alerts} {
		for _, m := range name.FindAllString(string(src), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if !strings.Contains(string(doc), "`"+base) {
				t.Errorf("%s is not documented in docs/OPERATIONS.md", m)
			}
		}
	}
}
