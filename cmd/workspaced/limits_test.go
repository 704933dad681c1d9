package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
)

// post sends one JSON-RPC body to url (an /mcp) with token and the
// session's headers, and returns the status, its Retry-After and body.
func post(t *testing.T, url, token, session, version, body string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(data)
}

// scrape reads /metrics (with token when not "") and returns the value of
// each sample named name{labels}.
func scrape(t *testing.T, base, token string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			m[l[:i]] = v
		}
	}
	return m
}

const callBody = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_env_data","arguments":{}}}`

// TestMCPHTTPFloodProbe: one token calling tools as fast as it can on a
// real `workspaced mcp --http` meets its limit — 429 with Retry-After and
// a JSON-RPC error saying when to retry — while another agent calling at
// the same time is served every call; /metrics counts the refusals and
// shows the limits. Before the limits, 300 calls in 3 s were 300 × 200.
func TestMCPHTTPFloodProbe(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	runaway := w.addToken("--agent", "runaway", "--task", "t1")
	calm := w.addToken("--agent", "calm", "--task", "t1")
	srv := w.mcpHTTP("--rate", "10", "--burst", "50")
	base := strings.TrimSuffix(srv.url, "/mcp")
	sessions := map[string]*mcp.ClientSession{}
	for agent, tok := range map[string]string{"runaway": runaway, "calm": calm} {
		cs, err := clitest.ConnectMCP(t, srv.url, tok)
		if err != nil {
			t.Fatalf("connect %s: %v", agent, err)
		}
		sessions[agent] = cs
	}
	version := sessions["runaway"].InitializeResult().ProtocolVersion
	const flood = 300
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		codes   = map[int]int{}
		refusal string
		retry   string
	)
	done := make(chan struct{})
	calmErrs := make(chan error, 1)
	go func() {
		// The other agent calls throughout the flood, one call at a time.
		defer close(calmErrs)
		for n := 0; ; n++ {
			select {
			case <-done:
				if n == 0 {
					calmErrs <- fmt.Errorf("no call made during the flood")
				}
				return
			default:
			}
			res, err := sessions["calm"].CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolListEnvData})
			if err != nil || res.IsError {
				calmErrs <- fmt.Errorf("call %d: %v %+v", n, err, res)
				return
			}
		}
	}()
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, ra, body := post(t, srv.url, runaway, sessions["runaway"].ID(), version, fmt.Sprintf(callBody, i+10))
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if code == http.StatusTooManyRequests {
				refusal, retry = body, ra
			}
		}()
	}
	wg.Wait()
	close(done)
	if err := <-calmErrs; err != nil {
		t.Fatalf("the other agent during the flood: %v", err)
	}
	// The burst of 50, less the few requests of connecting, and what
	// refilled at 10 a second while the flood went on.
	if codes[http.StatusOK] < 45 || codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK]+codes[http.StatusTooManyRequests] != flood {
		t.Fatalf("the flood's answers: %v, want 200 for the burst of 50 (and what refilled) and 429 past it", codes)
	}
	if n, err := strconv.Atoi(retry); err != nil || n < 1 {
		t.Errorf("Retry-After %q", retry)
	}
	if !strings.Contains(srv.Log.String(), `msg="http: request refused" limit=token_rate who="token tk_`) {
		t.Errorf("no log line names the token refused:\n%s", srv.Log)
	}
	if !strings.Contains(refusal, `"code":-32023`) || !strings.Contains(refusal, "too many requests with this token") || !strings.Contains(refusal, `"retryAfter":`) {
		t.Errorf("a refusal: %s", refusal)
	}
	t.Logf("one token, %d calls at once: %v", flood, codes)
	if code, body := clitest.HTTPGet(base + "/metrics"); code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	} else {
		promtoolCheckMetrics(t, body)
	}
	m := scrape(t, base, "")
	if got := m[`workspaced_http_refused_total{limit="token_rate"}`]; got != float64(codes[http.StatusTooManyRequests]) {
		t.Errorf("workspaced_http_refused_total{limit=\"token_rate\"} = %v, want %d", got, codes[http.StatusTooManyRequests])
	}
	for k, want := range map[string]float64{`workspaced_http_limit{limit="token_rate"}`: 10, `workspaced_http_limit{limit="token_burst"}`: 50,
		`workspaced_http_limit{limit="sessions"}`: 32, `workspaced_http_refused_total{limit="origin"}`: 0} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

// TestMCPHTTPSessionProbe: one token opening sessions as fast as it can
// on a real `workspaced mcp --http` gets its share (32 by default), every
// other agent still opens its sessions and is served, and /metrics counts
// the refusals. Before the share, 242 sessions of one token left every
// other agent 503.
func TestMCPHTTPSessionProbe(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	runaway := w.addToken("--agent", "runaway", "--task", "t1")
	srv := w.mcpHTTP("--burst", "1000")
	base := strings.TrimSuffix(srv.url, "/mcp")
	const flood = 300
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[int]int{}
	)
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := post(t, srv.url, runaway, "", "", init)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 32 || codes[http.StatusTooManyRequests] != flood-32 {
		t.Fatalf("%d sessions at once by one token: %v, want 32 × 200 and the rest 429", flood, codes)
	}
	for i := range 5 {
		agent := fmt.Sprintf("agent%d", i)
		cs, err := clitest.ConnectMCP(t, srv.url, w.addToken("--agent", agent, "--task", "t1"))
		if err != nil {
			t.Fatalf("%s after the flood: %v", agent, err)
		}
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolGetTask}); err != nil || res.IsError {
			t.Fatalf("%s's call: %v %+v", agent, err, res)
		}
	}
	m := scrape(t, base, "")
	if got := m[`workspaced_http_refused_total{limit="sessions"}`]; got != flood-32 {
		t.Errorf("sessions refused: %v, want %d", got, flood-32)
	}
	if got := m[`workspaced_mcp_sessions`]; got != 32+5 {
		t.Errorf("workspaced_mcp_sessions = %v, want %d", got, 32+5)
	}
}

var rePort = regexp.MustCompile(`serving https?://[^ ]*:(\d+)/mcp`)

// TestMetricsBehindTokens: off loopback /metrics wants a token — an
// agent's, or the metrics token — on `mcp --http`, and `serve --listen`
// refuses to start without one, TLS or not; /healthz and /readyz stay
// open. Before, both served /metrics to anyone.
func TestMetricsBehindTokens(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "worker", "--task", "t1")
	port, _ := w.Listen(rePort, "mcp", "--http", "0.0.0.0:0", "--insecure")
	base := "http://127.0.0.1:" + port
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "wsd_wrong", http.StatusUnauthorized},
		{"/metrics", tok, http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s with token %q: %d, want %d", c.path, c.token, resp.StatusCode, c.want)
		}
		if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="workspaced"`) {
			t.Errorf("%s: a 401 without the bearer challenge: %q", c.path, resp.Header.Get("WWW-Authenticate"))
		}
	}
	w.Fails(2, "anyone who reaches the port could read /metrics", "serve", "--listen", "0.0.0.0:0", "--tls-cert", "cert.pem", "--tls-key", "key.pem")
}

// TestMCPHTTPOrigin: /mcp refuses a request from a page of another
// origin (403, a JSON-RPC error), as the MCP transport requires, and
// serves one without Origin or from its own. Before, Origin:
// http://evil.example opened a session.
func TestMCPHTTPOrigin(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "worker", "--task", "t1")
	srv := w.mcpHTTP()
	host := strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/mcp")
	init := `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	code, _, body := post(t, srv.url, tok, "", "", init, "Origin", "http://evil.example")
	if code != http.StatusForbidden || !strings.Contains(body, `"id":3`) || !strings.Contains(body, "only pages of this origin may call it") {
		t.Fatalf("Origin http://evil.example: %d %s", code, body)
	}
	if code, _, body := post(t, srv.url, tok, "", "", init, "Origin", "http://"+host); code != http.StatusOK {
		t.Fatalf("its own origin: %d %s", code, body)
	}
	if code, _, body := post(t, srv.url, tok, "", "", init); code != http.StatusOK {
		t.Fatalf("no Origin: %d %s", code, body)
	}
}

// TestWebOriginAndChallenge: on a real `workspaced web`, a panel action
// from a page of another origin is refused even with the page's CSRF
// token (before, the CSRF token alone let it through), and a 401 of the
// panel's API or of /metrics carries the bearer challenge.
func TestWebOriginAndChallenge(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "origin")
	secret := filepath.Join(w.Dir, "panel.token")
	if err := os.WriteFile(secret, []byte("s3cret-panel-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := w.web("--token-file", secret)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	do := func(method, path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, p.url+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	const bearer = "Bearer s3cret-panel-token-0123456789abcdef"
	for _, c := range []struct{ path, auth, want string }{
		{"/api/tasks", "", `Bearer realm="workspaced"`},
		{"/api/tasks", "Bearer wrong", `Bearer realm="workspaced", error="invalid_token"`},
		{"/metrics", "Bearer wrong", `Bearer realm="workspaced", error="invalid_token"`},
	} {
		resp, _ := do("GET", c.path, "", "Authorization", c.auth)
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s with %q: %d %q, want 401 with %q", c.path, c.auth, resp.StatusCode, got, c.want)
		}
	}
	if resp, _ := do("GET", "/metrics", "", "Authorization", bearer); resp.StatusCode != 200 {
		t.Errorf("/metrics with the panel's token: %d", resp.StatusCode)
	}
	// Log in as a browser does, and take the page's CSRF token.
	if resp, body := do("POST", "/login", "token=s3cret-panel-token-0123456789abcdef", "Content-Type", "application/x-www-form-urlencoded", "Origin", p.url); resp.StatusCode != 200 {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	_, body := do("GET", "/api/csrf", "")
	var tok struct{ Token string }
	clitest.Decode(t, body, &tok)
	cancel := func(origin string) int {
		resp, body := do("POST", "/api/tasks/t1/cancel", `{"reason":"x"}`, "Content-Type", "application/json", "X-CSRF-Token", tok.Token, "Origin", origin)
		if resp.StatusCode == http.StatusForbidden && !strings.Contains(body, "only pages of this origin") {
			t.Errorf("a 403 for another reason: %s", body)
		}
		return resp.StatusCode
	}
	if code := cancel("http://evil.example"); code != http.StatusForbidden {
		t.Fatalf("a cancel from http://evil.example with the CSRF token: %d, want 403", code)
	}
	if code := cancel(p.url); code != http.StatusAccepted {
		t.Fatalf("a cancel from the panel's own page: %d, want 202", code)
	}
}

// TestAPIRateLimited: the HTTP API on the same listener is held to the
// same limits: past a token's burst, a problem (429, Retry-After) it
// reads as any other of the API's.
func TestAPIRateLimited(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "worker", "--task", "t1")
	srv := w.mcpHTTP("--rate", "0.5", "--burst", "3")
	base := strings.TrimSuffix(srv.url, "/mcp")
	codes := map[int]int{}
	var last *http.Response
	start := time.Now()
	for range 6 {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/tasks", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			last = resp
		}
	}
	// One more answer per 2 s the requests took (a rate of 0.5 a second).
	refilled := int(time.Since(start).Seconds() / 2)
	if codes[200] < 3 || codes[200] > 3+refilled || codes[429] != 6-codes[200] || last == nil {
		t.Fatalf("6 requests with a burst of 3: %v, want 3 served (and what refilled) and 429 past them", codes)
	}
	if ct := last.Header.Get("Content-Type"); ct != "application/problem+json" || last.Header.Get("Retry-After") == "" {
		t.Fatalf("a refusal of the API: %q, Retry-After %q", ct, last.Header.Get("Retry-After"))
	}
}

// TestMCPHTTPWrongTokens: a client trying wrong tokens from one address
// meets that address's limit — 401 for the burst, 429 past it — while an
// agent with a valid token is served; before, 300 wrong tokens were 300
// answers of 401, as fast as they came.
func TestMCPHTTPWrongTokens(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "worker", "--task", "t1")
	srv := w.mcpHTTP("--address-rate", "1", "--address-burst", "100")
	base := strings.TrimSuffix(srv.url, "/mcp")
	codes := map[int]int{}
	start := time.Now()
	for i := range 300 {
		code, _, _ := post(t, srv.url, fmt.Sprintf("wsd_guess%03d", i), "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		codes[code]++
	}
	refilled := int(time.Since(start).Seconds()) + 1 // at 1 a second
	if n := codes[http.StatusUnauthorized]; n < 100 || n > 100+refilled || codes[http.StatusTooManyRequests] != 300-n {
		t.Fatalf("300 wrong tokens: %v, want 401 for the burst of 100 (and what refilled) and 429 past it", codes)
	}
	if _, err := clitest.ConnectMCP(t, srv.url, tok); err != nil {
		t.Fatalf("a valid token after the guesses: %v", err)
	}
	// Scraped with the agent's token: the address's requests are spent.
	if got := scrape(t, base, tok)[`workspaced_http_refused_total{limit="address_rate"}`]; got != float64(codes[http.StatusTooManyRequests]) {
		t.Errorf("address_rate refusals: %v, want %d", got, codes[http.StatusTooManyRequests])
	}
}

// TestWebStreamsPerAddress: the live streams a client without a token
// may hold on a real `workspaced web` are bounded; past them a new
// stream is 429 while the pages still answer, and a stream closed frees
// its place.
func TestWebStreamsPerAddress(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Ok("task", "create", "--id", "t1", "--description", "streams")
	p := w.web("--streams-per-token", "2")
	open := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.url+"/api/events?events=0", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := open(), open()
	defer second.Body.Close()
	if first.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("two streams: %d %d", first.StatusCode, second.StatusCode)
	}
	third := open()
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream: %d, Retry-After %q", third.StatusCode, third.Header.Get("Retry-After"))
	}
	if code, _ := clitest.HTTPGet(p.url + "/api/tasks"); code != 200 {
		t.Fatalf("a page's request with the streams full: %d", code)
	}
	first.Body.Close()
	clitest.Eventually(t, "the closed stream's place to be free", func() (bool, string) {
		resp := open()
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}
