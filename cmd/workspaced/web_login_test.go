package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/mcpserver"
)

// panelSecret is a token file's secret as 'openssl rand -hex 32' makes one.
const panelSecret = "9c1f2e3d4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// TestWebLoopbackTrust: a loopback panel without a token file says at
// start that every local process is trusted and how to ask for a login;
// with --token-file on loopback, a local process without the token gets
// neither the CSRF token nor the memory, and cannot cancel a task; a
// token file others may read, or a weak token, is refused at start with
// how to make one.
func TestWebLoopbackTrust(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	open := w.web()
	clitest.Eventually(t, "a loopback panel without a token to say whom it trusts", func() (bool, string) {
		s := open.stderr.String()
		return strings.Contains(s, "any process on this machine may read every task") && strings.Contains(s, "--token-file"), s
	})
	p := w.web("--token-file", w.WriteTokenFile("panel.token", panelSecret, 0o600))
	for _, c := range []struct{ method, path string }{{"GET", "/api/csrf"}, {"GET", "/api/memory"}, {"POST", "/api/tasks/t1/cancel"}, {"GET", "/api/tasks"}} {
		req, _ := http.NewRequest(c.method, p.url+c.path, strings.NewReader(`{"reason":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", c.method, c.path, res.StatusCode)
		}
	}
	// Wrong logins: 5 checked and refused, then throttled unchecked; the
	// panel's /metrics (behind its token) counts both.
	codes := map[int]int{}
	for range 8 {
		res, err := http.PostForm(p.url+"/login", map[string][]string{"token": {"wrong"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		codes[res.StatusCode]++
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 3 {
		t.Fatalf("8 wrong logins: %v, want 5 × 401 then 429", codes)
	}
	req, _ := http.NewRequest("GET", p.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+panelSecret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for series, v := range map[string]float64{`workspaced_web_logins_total{outcome="failed"}`: 5, `workspaced_web_logins_total{outcome="throttled"}`: 3,
		`workspaced_web_logins_total{outcome="ok"}`: 0} {
		if got := sample(string(body), series); got != v {
			t.Errorf("%s = %v, want %v (status %d)", series, got, v, res.StatusCode)
		}
	}
	cases := []failCase{
		{"world-readable token file", exitFailure, "chmod 600", []string{"web", "--token-file", w.WriteTokenFile("open.token", panelSecret, 0o644)}},
		{"a 3-byte token", exitFailure, "fewer than 128", []string{"web", "--token-file", w.WriteTokenFile("weak.token", "abc", 0o600)}},
		{"no session time", exitUsage, "--session-ttl must be positive", []string{"web", "--session-ttl", "0s"}},
	}
	failsWithHints(t, w, cases)
}

// TestMCPAudit: every tool call over HTTP — done or refused — and every
// refused request is in the audit with the agent, the token's id (never
// the token) and the client's address; with --audit-log as JSON lines in
// a private file, else on the server's stderr.
func TestMCPAudit(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok, id := w.AddToken("--agent", "worker", "--task", "t1", "--global-memory", "write")
	other, otherID := w.AddToken("--agent", "other", "--task", "t1", "--global-memory", "write")
	logFile := filepath.Join(w.Dir, "audit.jsonl")
	srv := w.mcpHTTP("--audit-log", logFile)
	plain := w.mcpHTTP()
	for _, s := range []*httpServer{srv, plain} {
		cs, err := clitest.ConnectMCP(t, s.url, tok)
		if err != nil {
			t.Fatal(err)
		}
		a := &mcpAgent{t: t, name: "worker", cs: cs, stderr: &clitest.Log{}}
		a.call(mcpserver.ToolStoreMemory, map[string]any{"scope": "global", "key": "plan", "short_description": "d", "value": 1})
		if _, isErr := a.try(mcpserver.ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}); !isErr {
			t.Fatal("a claim without the right was not refused")
		}
		cs2, err := clitest.ConnectMCP(t, s.url, other)
		if err != nil {
			t.Fatal(err)
		}
		b := &mcpAgent{t: t, name: "other", cs: cs2, stderr: &clitest.Log{}}
		b.call(mcpserver.ToolStoreMemory, map[string]any{"scope": "global", "key": "plan", "short_description": "overwritten", "value": 2})
		if _, err := clitest.ConnectMCP(t, s.url, "wsd_not_a_token"); err == nil {
			t.Fatal("a wrong token connected")
		}
	}
	fi, err := os.Stat(logFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the audit file: %v, %v", fi, err)
	}
	f, _ := os.Open(logFile)
	defer f.Close()
	type rec struct{ Door, Action, Outcome, Agent, Token, From, Task, Target, Reason string }
	var recs []rec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), tok) || strings.Contains(sc.Text(), other) {
			t.Fatalf("the audit holds a token: %s", sc.Text())
		}
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Text())
		}
		recs = append(recs, r)
	}
	has := func(want rec) bool {
		for _, r := range recs {
			if r.Action == want.Action && r.Outcome == want.Outcome && r.Agent == want.Agent && r.Token == want.Token &&
				strings.HasPrefix(r.From, "127.0.0.1:") && r.Door == "mcp" && strings.Contains(r.Target, want.Target) && strings.Contains(r.Reason, want.Reason) {
				return true
			}
		}
		return false
	}
	for _, want := range []rec{
		{Action: mcpserver.ToolStoreMemory, Outcome: "ok", Agent: "worker", Token: id, Target: "scope=global key=plan"},
		{Action: mcpserver.ToolStoreMemory, Outcome: "ok", Agent: "other", Token: otherID, Target: "scope=global key=plan"},
		{Action: mcpserver.ToolClaimSubtask, Outcome: "refused", Agent: "worker", Token: id, Target: "subtask_id=st_1", Reason: "may not claim"},
		{Action: "request POST", Outcome: "refused", Reason: "unknown or revoked token"},
	} {
		if !has(want) {
			t.Errorf("the audit lacks %+v; it holds %+v", want, recs)
		}
	}
	if s := plain.Log.String(); !strings.Contains(s, "msg=audit") || !strings.Contains(s, "token="+otherID) {
		t.Errorf("the server's log holds no audit:\n%s", s)
	}
}
