package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/internal/guard"
	"github.com/workspaced/workspaced/tokens"
)

// countingObserver counts refusals by reason.
type countingObserver struct {
	mu      sync.Mutex
	refused map[string]int
}

func (o *countingObserver) ToolCalled(string, string) {}
func (o *countingObserver) Refused(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused[reason]++
}

// TestHTTPSessionsPerToken: one token opening sessions as fast as it can
// gets its share (429 with Retry-After and a JSON-RPC error past it), and
// every other agent still opens sessions: one runaway token never takes
// the slots of the team. Before the limit, 242 sessions of one token
// left the others 503.
func TestHTTPSessionsPerToken(t *testing.T) {
	const share, flood = 8, 300
	obs := &countingObserver{refused: map[string]int{}}
	f := newHTTPFixture(t, HTTPOptions{SessionsPerToken: share, Observer: obs})
	runaway := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}})
	other := f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}})
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		codes  = map[int]int{}
		sample string
	)
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := f.rawPostHeaders(runaway, []byte(initBody))
			mu.Lock()
			defer mu.Unlock()
			codes[code.status]++
			if code.status == http.StatusTooManyRequests {
				sample = body
				if code.retryAfter == "" {
					t.Errorf("a 429 without Retry-After")
				}
			}
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != share || codes[http.StatusTooManyRequests] != flood-share {
		t.Fatalf("answers by status: %v, want %d × 200 and %d × 429", codes, share, flood-share)
	}
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]int `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(sample), &rpc); err != nil {
		t.Fatalf("a refusal is no JSON-RPC error: %q", sample)
	}
	if rpc.ID != 1 || rpc.Error.Code != CodeRateLimited || rpc.Error.Data["retryAfter"] < 1 ||
		!strings.Contains(rpc.Error.Message, "too many sessions for this token: agent worker holds 8") || !strings.Contains(rpc.Error.Message, "hint: end a session") {
		t.Fatalf("a refusal: %+v", rpc)
	}
	// Everyone else is served, to the same share.
	for i := range share {
		if _, err := f.connect(other, ""); err != nil {
			t.Fatalf("the other agent's session %d: %v\n%s", i+1, err, f.log.String())
		}
	}
	if n := f.h.Sessions(); n != 2*share {
		t.Fatalf("%d sessions open, want %d", n, 2*share)
	}
	obs.mu.Lock()
	if obs.refused[RefusalTokenSessions] != flood-share || obs.refused[RefusalTooManySessions] != 0 {
		t.Errorf("refusals observed: %v", obs.refused)
	}
	obs.mu.Unlock()
	if !strings.Contains(f.log.String(), "too many sessions for this token") {
		t.Errorf("no log line for the refused sessions")
	}
}

// TestHTTPChallenge: a 401 says how to authenticate (RFC 6750): the bare
// challenge without a token, error="invalid_token" with a wrong or
// revoked one, error="invalid_request" with another scheme.
func TestHTTPChallenge(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	for _, c := range []struct{ name, auth, want string }{
		{"none", "", `Bearer realm="workspaced"`},
		{"unknown", "Bearer wsd_nope", `Bearer realm="workspaced", error="invalid_token", error_description="the token is unknown, revoked or expired"`},
		{"basic", "Basic dXNlcjpwYXNz", `Bearer realm="workspaced", error="invalid_request"`},
	} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Values("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%s: %d %q, want 401 with %q", c.name, resp.StatusCode, got, c.want)
		}
	}
	if got := guard.Challenge(&http.Request{Header: http.Header{}}, "https://h.example/.well-known/oauth-protected-resource"); !strings.Contains(got, `resource_metadata="https://h.example/`) {
		t.Errorf("challenge with resource metadata: %q", got)
	}
}

type httpAnswer struct {
	status     int
	retryAfter string
}

// rawPostHeaders posts body to /mcp with token and returns the status,
// its Retry-After and its body.
func (f *httpFixture) rawPostHeaders(token string, body []byte) (httpAnswer, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Error(err)
		return httpAnswer{}, ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return httpAnswer{resp.StatusCode, resp.Header.Get("Retry-After")}, string(data)
}
