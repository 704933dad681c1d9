package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/internal/clitest"
)

// BenchmarkMCPCalls measures tool calls per second from 8 concurrent
// clients — get_env_data and store_env_data (a 1 KiB value, durable) —
// over Streamable HTTP (one `workspaced mcp --http` process, 8 sessions
// with their own tokens) and over stdio (8 `workspaced mcp` processes),
// beside the floor: one durable 1 KiB write (temporary file, fsync,
// rename, directory fsync) at a time. Each round runs every mode in turn,
// so that a drift in the disk's speed favours none. Run it with
//
//	go test -run '^$' -bench MCPCalls -benchtime 20x ./cmd/workspaced/
//
// It reports calls/s per mode and the store rates ÷ the floor's rate.
func BenchmarkMCPCalls(b *testing.B) {
	const clients, perClient = 8, 8
	dir := b.TempDir()
	root := filepath.Join(dir, "workspace")
	env := append(clitest.CleanEnv(), "WORKSPACE_ROOT="+root)
	run := func(args ...string) string {
		r, err := clitest.Exec(dir, env, "", args...)
		if err != nil || r.Code != 0 {
			b.Fatalf("workspaced %v: %v %v", args, r, err)
		}
		return r.Stdout
	}
	run("init")
	run("task", "create", "--id", "t1", "--description", "bench")

	// HTTP: one server, one token and one session per client.
	cmd := clitest.Command("mcp", "--http", "127.0.0.1:0")
	cmd.Dir, cmd.Env = dir, env
	stderr := &clitest.Log{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var url string
	for end := time.Now().Add(30 * time.Second); url == ""; {
		if m := regexp.MustCompile(`serving (http://[^ ]+/mcp)`).FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(end) {
			b.Fatalf("mcp --http did not start: %s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	httpTransport := &http.Transport{MaxIdleConnsPerHost: 2 * clients}
	sessions := map[string][]*mcp.ClientSession{}
	for i := range clients {
		var out struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal([]byte(run("token", "add", "--json", "--agent", fmt.Sprintf("c%d", i), "--task", "t1")), &out); err != nil {
			b.Fatal(err)
		}
		tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: clitest.Bearer{Token: out.Token, Next: httpTransport}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions["http"] = append(sessions["http"], cs)
	}
	// stdio: one process per client.
	for i := range clients {
		c := clitest.Command("mcp", "--task", "t1", "--agent", fmt.Sprintf("s%d", i))
		c.Dir, c.Env = dir, env
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: c}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions["stdio"] = append(sessions["stdio"], cs)
	}
	value := strings.Repeat("v", 1022)
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
	// Every client has its key before the first get.
	for _, ss := range sessions {
		for i, cs := range ss {
			call(cs, "store_env_data", map[string]any{"key": fmt.Sprintf("k%d", i), "short_description": "bench", "value": value})
		}
	}
	floorDir := b.TempDir()
	floorData := make([]byte, 1024)
	elapsed := map[string]time.Duration{}
	calls := map[string]int{}
	// burst runs fn on every client at once, perClient times each.
	burst := func(mode string, n int, fn func(i int)) {
		var wg sync.WaitGroup
		t := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perClient {
					fn(i)
				}
			}()
		}
		wg.Wait()
		elapsed[mode] += time.Since(t)
		calls[mode] += n * perClient
	}
	b.ResetTimer()
	for b.Loop() {
		burst("floor", 1, func(int) { floorWriteB(b, floorDir, floorData) })
		for _, tr := range []string{"http", "stdio"} {
			ss := sessions[tr]
			burst(tr+"_get", clients, func(i int) { call(ss[i], "get_env_data", map[string]any{"key": fmt.Sprintf("k%d", i)}) })
			burst(tr+"_store", clients, func(i int) {
				call(ss[i], "store_env_data", map[string]any{"key": fmt.Sprintf("k%d", i), "short_description": "bench", "value": value})
			})
		}
	}
	b.StopTimer()
	rate := func(mode string) float64 { return float64(calls[mode]) / elapsed[mode].Seconds() }
	for _, mode := range []string{"floor", "http_get", "http_store", "stdio_get", "stdio_store"} {
		b.ReportMetric(rate(mode), mode+"/s")
	}
	b.ReportMetric(rate("http_store")/rate("floor"), "http_store_x_floor")
	b.ReportMetric(rate("stdio_store")/rate("floor"), "stdio_store_x_floor")
}

// floorWriteB is the floor: a durable replace of a 1 KiB file by hand.
func floorWriteB(b *testing.B, dir string, data []byte) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, "target.json"))
	}
	if err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
}
