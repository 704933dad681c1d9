package sqlite_test

// The agents of TestContention: CLI agents, the MCP server's client, the
// Python worker, and the panel's readers and stream.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
)

// cliAgent is one agent running workspaced commands one after another.
func (r *run) cliAgent(ctx context.Context, agent string) {
	for r.going(ctx) {
		task := r.hives.current()
		r.cliIncrement(task, counterKey(rand.IntN(counterKeys)), agent)
		r.cliWork(task, agent)
	}
}

// cliIncrement reads a counter and writes it plus one if its version
// has not moved.
func (r *run) cliIncrement(task, key, agent string) {
	args := []string{"env", "get", "--task", task, "--key", key, "--json"}
	get := r.cli("", args...)
	var e struct{ Version, Value int }
	if get.Code != 0 || json.Unmarshal([]byte(get.Stdout), &e) != nil {
		r.unexpected(args, get)
		return
	}
	args = []string{"env", "update", "--task", task, "--key", key, "--value", strconv.Itoa(e.Value + 1), "--if-version", strconv.Itoa(e.Version), "--agent", agent}
	up := r.cli("", args...)
	switch {
	case up.Code == 0:
		r.increment(task, key, true)
	case up.Code == 4 && strings.Contains(up.Stderr, "version is "):
		r.increment(task, key, false)
	default:
		r.unexpected(args, up)
	}
}

// cliWork reads the state, claims a pending subtask waiting for the
// verdict and, when it won, writes the output with its done marker.
func (r *run) cliWork(task, agent string) {
	args := []string{"state", "show", "--task", task, "--json"}
	res := r.cli("", args...)
	if res.Code == 3 && strings.Contains(res.Stderr, "no state") {
		return // the daemon has not taken the task yet
	}
	var st subtaskState
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
		r.unexpected(args, res)
		return
	}
	if st.finished() {
		r.hives.next(task)
		return
	}
	pending := st.pending()
	if len(pending) == 0 {
		return
	}
	sub := pending[rand.IntN(len(pending))]
	args = []string{"claim", "--task", task, "--agent", agent, "--subtask", sub, "--wait", "5m", "--json"}
	res = r.cli("", args...)
	var v struct{ Marker, Verdict string }
	if res.Stdout != "" && json.Unmarshal([]byte(res.Stdout), &v) != nil {
		r.unexpected(args, res)
		return
	}
	r.marker(agent, task, v.Marker)
	switch {
	case res.Code == 4 && v.Verdict == "lost":
		return
	case res.Code == 4 && v.Marker == "" && strings.Contains(res.Stderr, "takes nothing more"):
		r.hives.next(task)
		return
	case res.Code != 0 || v.Verdict != "won":
		r.unexpected(args, res)
		return
	}
	args = []string{"output", "write", "--task", task, "--subtask", sub, "--agent", agent, "--file", "-", "--done", "--json"}
	res = r.cli(`{"summary":"done by `+agent+`"}`, args...)
	var out struct{ Marker string }
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &out) != nil || out.Marker == "" {
		r.unexpected(args, res)
		return
	}
	r.marker(agent, task, out.Marker)
	r.done(task, sub, agent)
}

// mcpAgent runs `workspaced mcp` on each task in turn, driven by the Go
// SDK's client as an agent runtime drives it.
func (r *run) mcpAgent(ctx context.Context, agent string) {
	for r.mcpGoing(ctx) {
		task := r.hives.current()
		if r.mcpSession(ctx, task, agent) {
			r.hives.next(task)
		}
	}
}

// mcpSession works on task over one MCP server until the task is
// finished (true) or the run ends.
func (r *run) mcpSession(ctx context.Context, task, agent string) bool {
	cmd := clitest.Command("--root", r.w.Root, "mcp", "--task", task, "--agent", agent)
	cmd.Dir, cmd.Env = r.w.Dir, clitest.CleanEnv()
	stderr := &clitest.Log{}
	cmd.Stderr = stderr
	defer func() { r.scan("workspaced mcp", stderr.String()) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "contention", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		r.t.Errorf("connect to workspaced mcp: %v (stderr: %s)", err, stderr)
		return false
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (text string, data []byte, isErr bool, ok bool) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			r.t.Errorf("mcp %s: %v (stderr: %s)", tool, err, stderr)
			return "", nil, false, false
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		text = strings.Join(parts, "\n")
		r.scan("mcp "+tool, text)
		data, _ = json.Marshal(res.StructuredContent)
		return text, data, res.IsError, true
	}
	for r.mcpGoing(ctx) {
		if !r.mcpIncrement(task, counterKey(rand.IntN(counterKeys)), call) {
			return false
		}
		text, _, isErr, ok := call("get_task_state", nil)
		if ok && isErr && strings.Contains(text, "no state") {
			continue // the daemon has not taken the task yet
		}
		var st subtaskState
		if !ok || isErr || json.Unmarshal([]byte(text), &st) != nil {
			r.t.Errorf("mcp get_task_state: %s", text)
			return false
		}
		if st.finished() {
			return true
		}
		pending := st.pending()
		if len(pending) == 0 {
			continue
		}
		sub := pending[rand.IntN(len(pending))]
		text, data, isErr, ok := call("claim_subtask", map[string]any{"subtask_id": sub})
		var v struct{ Marker, Verdict string }
		if !ok || json.Unmarshal(data, &v) != nil {
			return false
		}
		r.marker(agent, task, v.Marker)
		switch {
		case !isErr && v.Verdict == "won":
		case v.Verdict == "lost": // a tool error telling whose it is
			continue
		case isErr && v.Marker == "" && strings.Contains(text, "takes nothing more"):
			return true // the last pending subtask was taken and done meanwhile
		default:
			r.t.Errorf("mcp claim_subtask %s: %s", sub, text)
			return false
		}
		text, data, isErr, ok = call("signal_done", map[string]any{"subtask_id": sub, "output": map[string]any{"summary": "done by " + agent}})
		v.Marker = ""
		if !ok || json.Unmarshal(data, &v) != nil || isErr || v.Marker == "" {
			r.t.Errorf("mcp signal_done %s: %s", sub, text)
			return false
		}
		r.marker(agent, task, v.Marker)
		r.done(task, sub, agent)
	}
	return false
}

// mcpIncrement is the MCP agent's read-modify-write: the version from
// the manifest, then the value, then update_env_data with if_version (a
// value read after the version moved fails the check, so nothing is
// lost).
func (r *run) mcpIncrement(task, key string, call func(string, map[string]any) (string, []byte, bool, bool)) bool {
	text, _, isErr, ok := call("list_env_data", nil)
	var items []struct {
		Key     string
		Version int
	}
	if !ok || isErr || json.Unmarshal([]byte(text), &items) != nil {
		r.t.Errorf("mcp list_env_data: %s", text)
		return false
	}
	i := slices.IndexFunc(items, func(it struct {
		Key     string
		Version int
	}) bool {
		return it.Key == key
	})
	val, _, isErr, ok := call("get_env_data", map[string]any{"key": key})
	n, err := strconv.Atoi(val)
	if !ok || isErr || err != nil || i < 0 {
		r.t.Errorf("mcp get_env_data %s: %s (manifest %s)", key, val, text)
		return false
	}
	text, _, isErr, ok = call("update_env_data", map[string]any{"key": key, "value": n + 1, "if_version": items[i].Version})
	switch {
	case !ok:
		return false
	case !isErr:
		r.increment(task, key, true)
	case strings.Contains(text, "version is "):
		r.increment(task, key, false)
	default:
		r.t.Errorf("mcp update_env_data: %s", text)
		return false
	}
	return true
}

// pythonAgent runs the Python worker on each task in turn: it
// stops when the task is finished, or gives up at the deadline.
func (r *run) pythonAgent(ctx context.Context, agent string) {
	if _, err := os.Stat(pythonWorker); err != nil {
		r.t.Logf("no Python worker yet: %v", err)
		return
	}
	for r.going(ctx) {
		task := r.hives.current()
		left := time.Until(r.deadline).Seconds()
		cmd := exec.Command(r.python, pythonWorker, "--root", r.w.Root, "--task", task, "--agent", agent, "--timeout", strconv.FormatFloat(left, 'f', 1, 64))
		src, _ := filepath.Abs(pythonSrc)
		cmd.Env = append(clitest.CleanEnv(), "PYTHONPATH="+src)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r.scan("the Python worker", stdout.String()+stderr.String())
		if err != nil {
			// At the deadline it gives up (exit 1): only a failure before
			// it counts.
			if !time.Now().After(r.deadline) {
				r.t.Errorf("python worker on %s: %v\n%s%s", task, err, stdout.String(), stderr.String())
			}
			return
		}
		subs, ok := strings.CutPrefix(strings.TrimSpace(stdout.String()), agent+" finished ")
		if !ok {
			r.t.Errorf("python worker on %s printed %q", task, stdout.String())
			return
		}
		for _, sub := range strings.Fields(subs) {
			if sub != "nothing" {
				r.done(task, sub, agent)
			}
		}
		r.hives.next(task)
	}
}

// startPanel starts `workspaced web` and returns its address and log.
func (r *run) startPanel() (string, *clitest.Log) {
	// The reader polls the panel as fast as it answers, from one address
	// without a token: far more than a page does, and than the default
	// limit of such an address lets through.
	cmd := clitest.Command("--root", r.w.Root, "web", "--listen", "127.0.0.1:0", "--read-only", "--address-rate", "1000000", "--address-burst", "1000000")
	cmd.Dir, cmd.Env = r.w.Dir, clitest.CleanEnv()
	log := &clitest.Log{}
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("workspaced web printed no address: %v: %s", err, log)
	}
	go io.Copy(log, br)
	return strings.TrimSuffix(strings.TrimSpace(line), "/"), log
}

// stream is the panel's stream of every task's events, followed from
// before the first task until the checks, as an open page follows it.
type stream struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ids    map[string]int // event id (task:position): times pushed
	err    string
}

// followPanel connects to the panel's stream and follows it in the
// background.
func (r *run) followPanel(base string) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	st := &stream{cancel: cancel, done: make(chan struct{}), ids: map[string]int{}}
	r.t.Cleanup(st.stop)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		r.t.Fatalf("follow the panel: %v %v", err, resp)
	}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		ev := false
		for sc.Scan() {
			line := sc.Text()
			r.scan("the panel's stream", line)
			st.mu.Lock()
			switch {
			case line == "event: reset":
				st.err = "the stream was reset: it fell behind"
			case strings.HasPrefix(line, "event: "):
				ev = line == "event: ev"
			case ev && strings.HasPrefix(line, "id: "):
				st.ids[strings.TrimPrefix(line, "id: ")]++
			}
			st.mu.Unlock()
		}
		if ctx.Err() == nil {
			st.mu.Lock()
			st.err = fmt.Sprintf("the stream ended: %v", sc.Err())
			st.mu.Unlock()
		}
	}()
	return st
}

func (st *stream) stop() {
	st.cancel()
	<-st.done
}

// check waits until the stream has pushed as many events as the
// database holds, then checks it pushed each of them once; it returns
// how many.
func (st *stream) check(r *run, sdb *sql.DB) int {
	defer st.stop()
	var n int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if err := sdb.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil {
			r.t.Fatal(err)
		}
		st.mu.Lock()
		got, trouble := len(st.ids), st.err
		st.mu.Unlock()
		if trouble != "" {
			r.t.Errorf("the panel's stream: %s", trouble)
			return got
		}
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			r.t.Errorf("the panel's stream pushed %d of the %d events", got, n)
			break
		}
	}
	st.stop()
	rows, err := sdb.Query("SELECT task_id || ':' || id FROM events")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			r.t.Fatal(err)
		}
		if k := st.ids[id]; k != 1 {
			r.t.Errorf("the panel's stream pushed event %s %d times", id, k)
		}
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	if len(st.ids) != n {
		r.t.Errorf("the panel's stream pushed %d events, the database holds %d", len(st.ids), n)
	}
	return n
}

// readPanel polls the panel's API as a page open on the current task
// does.
func (r *run) readPanel(ctx context.Context, base string) {
	for r.going(ctx) {
		r.sampleWAL()
		task := r.hives.current()
		for _, p := range []string{"/api/tasks", "/api/tasks/" + task, "/api/tasks/" + task + "/journal",
			"/api/tasks/" + task + "/env", "/api/tasks/" + task + "/events", "/api/events?limit=50"} {
			if _, ok := r.get(base + p); !ok {
				return
			}
		}
	}
}

// get reads one answer of the panel, which must be 200.
func (r *run) get(url string) ([]byte, bool) {
	resp, err := http.Get(url)
	if err != nil {
		r.t.Errorf("GET %s: %v", url, err)
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r.scan("GET "+url, string(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		r.t.Errorf("GET %s: %d %v: %s", url, resp.StatusCode, err, body)
		return nil, false
	}
	r.reads.Add(1)
	return body, true
}
