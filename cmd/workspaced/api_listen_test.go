package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// apiGet sends GET base+path with the headers given (name, value...) and
// returns the status, the Content-Type and the body.
func apiGet(t *testing.T, base, path string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(body)
}

// agentOf is the agent GET /api/v1/agent answers.
func agentOf(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET /api/v1/agent: %v: %s", err, body)
	}
	return v.Agent
}

// TestAPIOnTheListeners: the HTTP API rides on the listeners of web, mcp
// --http and serve --listen, under each one's rules: web and serve on
// loopback without a token file trust the machine (the agent named in
// the Workspace-Agent header, cli by default); mcp --http admits tokens
// only, as its /mcp does; every one serves the document.
func TestAPIOnTheListeners(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	tok := w.addToken("--agent", "alpha", "--task", "t1")

	p := w.web()
	st, _, body := apiGet(t, p.url, "/api/v1/agent", "Workspace-Agent", "planner")
	if st != 200 || agentOf(t, body) != "planner" {
		t.Errorf("web: GET /api/v1/agent as planner: %d %s", st, body)
	}
	if st, _, body := apiGet(t, p.url, "/api/v1/agent", "Authorization", "Bearer "+tok); st != 200 || agentOf(t, body) != "alpha" {
		t.Errorf("web: GET /api/v1/agent with a token: %d %s", st, body)
	}

	m := w.mcpHTTP()
	base := strings.TrimSuffix(m.url, "/mcp")
	if st, ct, _ := apiGet(t, base, "/api/v1/agent", "Workspace-Agent", "planner"); st != 401 || ct != "application/problem+json" {
		t.Errorf("mcp --http: GET /api/v1/agent without a token: %d %s, want a 401 problem", st, ct)
	}
	if st, _, body := apiGet(t, base, "/api/v1/tasks/t1", "Authorization", "Bearer "+tok); st != 200 || !strings.Contains(body, `"id":"t1"`) {
		t.Errorf("mcp --http: GET /api/v1/tasks/t1 with a token: %d %s", st, body)
	}

	_, ops := w.opsServe()
	if st, _, body := apiGet(t, ops, "/api/v1/agent"); st != 200 || agentOf(t, body) != "cli" {
		t.Errorf("serve --listen: GET /api/v1/agent: %d %s", st, body)
	}
	for _, u := range []string{p.url, base, ops} {
		if st, ct, body := apiGet(t, u, "/api/v1/openapi.json"); st != 200 || ct != "application/json" || !strings.Contains(body, `"openapi": "3.1.0"`) {
			t.Errorf("%s: GET /api/v1/openapi.json: %d %s", u, st, ct)
		}
	}
	if st, _, _ := apiGet(t, ops, "/healthz"); st != 200 {
		t.Errorf("serve --listen: /healthz beside the API: %d", st)
	}
}
