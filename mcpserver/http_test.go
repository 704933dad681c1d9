package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// syncLog is a log the handler writes to from many goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// httpFixture serves the fixture over HTTP at /mcp.
type httpFixture struct {
	t   testing.TB
	w   *files.Store
	h   *HTTP
	srv *httptest.Server
	log *syncLog
}

func newHTTPFixture(t testing.TB, opt HTTPOptions) *httpFixture {
	t.Helper()
	w := fixture(t)
	toks, err := tokens.NewStore(w.Root())
	if err != nil {
		t.Fatal(err)
	}
	f := startHTTP(t, w, toks, opt)
	f.w = w
	t.Cleanup(f.srv.Close)
	return f
}

// startHTTP serves st's tools at /mcp over HTTP with the grants k keeps,
// the server's log kept in the fixture's; the caller closes it.
func startHTTP(t testing.TB, st workspace.Store, k tokens.Keeper, opt HTTPOptions) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, log: &syncLog{}}
	opt.Log = slog.New(slog.NewTextHandler(f.log, nil))
	h, err := NewHTTP(st, k, opt)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	f.srv = httptest.NewServer(mux)
	return f
}

// token adds a token for g and returns it.
func (f *httpFixture) token(g tokens.Grant) string {
	f.t.Helper()
	tok, _, err := tokens.Add(context.Background(), tokens.Tree(f.w), g)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// bearer adds a token and fixed headers to every request.
type bearer struct {
	token  string
	header http.Header
	next   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range b.header {
		r.Header[k] = v
	}
	return b.next.RoundTrip(r)
}

// connect opens a session with token at /mcp?query.
func (f *httpFixture) connect(token, query string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp?" + query, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
}

func (f *httpFixture) mustConnect(token, query string) *mcp.ClientSession {
	f.t.Helper()
	cs, err := f.connect(token, query)
	if err != nil {
		f.t.Fatalf("connect %s: %v", query, err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

// callHTTP calls a tool and returns its text and whether it is a tool
// error; a protocol error fails the test.
func callHTTP(t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.(*mcp.TextContent).Text)
	}
	return strings.Join(parts, "\n"), res.IsError
}

var allRights = []string{tokens.RightClaim, tokens.RightDone, tokens.RightPlan, tokens.RightReview}

// TestHTTPEveryTool: the go-sdk client over Streamable HTTP lists every
// tool and calls each; every write is the token's agent's.
func TestHTTPEveryTool(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{})
	tok := f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}, May: allRights, GlobalMemory: tokens.GlobalWrite})
	cs := f.mustConnect(tok, "thread=th_observer")
	if got := cs.InitializeResult().Instructions; !strings.Contains(got, `You are agent "observer", working on task "t1" in thread "th_observer"`) {
		t.Fatalf("instructions: %s", got)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	want := ToolNames()
	sort.Strings(names)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	plan := map[string]any{"subtasks": []any{map[string]any{"id": "st_1", "description": "do it"}}}
	calls := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": map[string]any{"n": 1}}, false, "Stored 'k'"},
		{ToolGetEnvData, map[string]any{"key": "k"}, false, `{"n":1}`},
		{ToolListEnvData, nil, false, `"stored_by":"observer"`},
		{ToolUpdateEnvData, map[string]any{"key": "k", "value": 2}, false, "version 2"},
		{ToolStoreMemory, map[string]any{"key": "m", "value": "x"}, false, "your agent memory"},
		{ToolStoreMemory, map[string]any{"key": "g", "value": "x", "scope": "global"}, false, "global memory"},
		{ToolGetMemory, map[string]any{"key": "m"}, false, `"x"`},
		{ToolListMemory, map[string]any{"scope": "global"}, false, `"key":"g"`},
		{ToolDeleteMemory, map[string]any{"key": "m"}, false, "Deleted 'm'"},
		{ToolGetMemoryHistory, map[string]any{"key": "m"}, false, `"stored_by":"observer"`},
		{ToolGetTask, nil, false, `"id":"t1"`},
		{ToolGetTaskState, nil, true, "no state yet"},
		{ToolGetPlan, nil, true, "no plan yet"},
		{ToolWritePlan, plan, false, "Wrote plan.json version 1"},
		{ToolAmendPlan, map[string]any{"add": []any{map[string]any{"id": "st_2", "description": "more"}}}, true, "task t1 has no approved plan to amend"},
		{ToolGetPlan, nil, false, `"created_by":"observer"`},
		{ToolGetSubtask, map[string]any{"subtask_id": "st_1"}, false, `"id":"st_1"`},
		{ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}, false, "Wrote reviews/plan_v1.json"},
		{ToolListReviews, nil, false, `"reviewer":"observer"`},
		{ToolGetReview, map[string]any{"review_id": "plan_v1"}, false, `"verdict":"approved"`},
		{ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}, false, "Claim for subtask 'st_1' dropped"},
		{ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"summary": "done"}}, false, "Wrote outputs/st_1.json"},
		{ToolGetOutput, map[string]any{"subtask_id": "st_1"}, false, `"worker_id":"observer"`},
		{ToolDeleteEnvData, map[string]any{"key": "k"}, false, "Deleted 'k'"},
		{ToolGetDelegationContext, nil, false, "solver"},
		{ToolListCapabilities, nil, false, "observer"},
		{ToolSkills, nil, false, `"skills"`},
		{ToolListTasks, nil, false, `[{"id":"t1"`},
		{ToolCreateTask, map[string]any{"description": "x"}, true, "agent observer may not create tasks: its token covers t1"},
		{ToolGetContext, map[string]any{"budget": 1000}, false, "What patterns do you notice?"},
		{ToolPutMemoryItem, map[string]any{"namespace": []string{"users", "42"}, "key": "prefs", "value": map[string]any{"n": 1}, "ttl_seconds": 60}, false, "(version 1). It expires at"},
		{ToolPutMemoryItem, map[string]any{"namespace": []string{"users", "42"}, "key": "prefs", "value": map[string]any{"n": 2}, "if_absent": true}, true, "version is 1"},
		{ToolGetMemoryItem, map[string]any{"namespace": []string{"users", "42"}, "key": "prefs"}, false, `"value":{"n":1}`},
		{ToolSearchMemory, map[string]any{"namespace_prefix": []string{"users"}, "filter": map[string]any{"n": map[string]any{"$gte": 1}}}, false, `"key":"prefs"`},
		{ToolSearchMemory, map[string]any{"filter": map[string]any{"n": map[string]any{"$near": 1}}}, true, `unknown operator "$near"`},
		{ToolMemoryNamespaces, map[string]any{"prefix": []string{"*"}, "max_depth": 1}, false, `[["users"]]`},
		{ToolDeleteMemoryItem, map[string]any{"namespace": []string{"users", "42"}, "key": "prefs", "if_version": 1}, false, `Deleted 'prefs' from ["users","42"]`},
		{ToolGetMemoryItem, map[string]any{"namespace": []string{"users", "42"}, "key": "prefs"}, true, "no such item"},
	}
	called := map[string]bool{}
	for _, c := range calls {
		text, isErr := callHTTP(t, cs, c.tool, c.args)
		called[c.tool] = true
		if isErr != c.isError || !strings.Contains(text, c.want) {
			t.Errorf("%s(%v) = %q (error %v), want %q (error %v)", c.tool, c.args, text, isErr, c.want, c.isError)
		}
	}
	for _, n := range ToolNames() {
		if !called[n] {
			t.Errorf("%s not called", n)
		}
	}
	// The markers on disk carry the token's agent.
	ents, err := readDir(f.w, "tasks/t1")
	if err != nil {
		t.Fatal(err)
	}
	markers := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".claim.") || strings.HasPrefix(e.Name(), ".done.") {
			markers++
			if !strings.Contains(e.Name(), ".observer.") {
				t.Errorf("marker %s is not observer's", e.Name())
			}
		}
	}
	if markers != 4 {
		t.Errorf("%d markers, want 4 (plan, review, claim, done)", markers)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "workspace://tasks/t1/env"})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read the env resource: %v", err)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "workspace://tasks/t2/env"}); err == nil || !strings.Contains(err.Error(), "may not read task t2") {
		t.Fatalf("read another task's resource: %v", err)
	}
	if n := f.h.Sessions(); n != 1 {
		t.Errorf("%d sessions open, want 1", n)
	}
	cs.Close()
	eventually(t, "the session counted closed", func() bool { return f.h.Sessions() == 0 })
}

// eventually waits for cond, failing the test after a generous deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, func() (bool, string) { return cond(), "not yet" })
}

// rawPost posts body to /mcp with the headers given and returns the
// status and the body of the answer.
func (f *httpFixture) rawPost(token string, header http.Header, query string, body []byte) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp?"+query, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// TestHTTPRefusals: each refusal is an HTTP status or a tool error that
// says why, a log line names the agent and the reason, and the server
// goes on serving.
func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{})
	worker := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}})
	both := f.token(tokens.Grant{Agent: "reader", Tasks: []string{"t1", "t2"}, GlobalMemory: tokens.GlobalRead})
	cs := f.mustConnect(worker, "")

	t.Run("no token", func(t *testing.T) {
		code, body := f.rawPost("", nil, "", []byte(initBody))
		if code != http.StatusUnauthorized || !strings.Contains(body, "no bearer token") {
			t.Fatalf("%d %q", code, body)
		}
		if _, err := f.connect("", "task=t1"); err == nil {
			t.Fatal("the client connected without a token")
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		code, body := f.rawPost("wsd_not-a-token", nil, "", []byte(initBody))
		if code != http.StatusUnauthorized || !strings.Contains(body, "unknown or revoked token") {
			t.Fatalf("%d %q", code, body)
		}
	})
	t.Run("another task", func(t *testing.T) {
		_, err := f.connect(worker, "task=t2")
		if err == nil || !strings.Contains(err.Error(), "agent worker may not work on task t2: its token covers t1") {
			t.Fatalf("connect: %v", err)
		}
		_, err = f.connect(worker, "thread=th_other")
		if err == nil || !strings.Contains(err.Error(), "may not work on task t2") {
			t.Fatalf("connect by thread: %v", err)
		}
	})
	t.Run("no task named", func(t *testing.T) {
		// The session serves every task the token covers, each call
		// naming its own.
		cs := f.mustConnect(both, "")
		if text, isErr := callHTTP(t, cs, ToolListTasks, nil); isErr || !strings.Contains(text, `"id":"t1"`) || !strings.Contains(text, `"id":"t2"`) {
			t.Fatalf("list_tasks: %v %q", isErr, text)
		}
		if text, isErr := callHTTP(t, cs, ToolGetTask, nil); !isErr || !strings.Contains(text, "no task named") {
			t.Fatalf("get_task without a task: %v %q", isErr, text)
		}
		if text, isErr := callHTTP(t, cs, ToolGetTask, map[string]any{"task": "t2"}); isErr || !strings.Contains(text, `"id":"t2"`) {
			t.Fatalf("get_task t2: %v %q", isErr, text)
		}
		if text, isErr := callHTTP(t, cs, ToolGetTask, map[string]any{"task": "t3"}); !isErr || !strings.Contains(text, "may not work on task t3") {
			t.Fatalf("get_task t3: %v %q", isErr, text)
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		code, body := f.rawPost(both, nil, "task=t9", []byte(initBody))
		if code != http.StatusForbidden || !strings.Contains(body, "may not work on task t9") {
			t.Fatalf("%d %q", code, body)
		}
		code, body = f.rawPost(both, nil, "task=t1&thread=th_other", []byte(initBody))
		if code != http.StatusNotFound || !strings.Contains(body, "th_other") {
			t.Fatalf("%d %q", code, body)
		}
	})
	t.Run("another agent", func(t *testing.T) {
		_, err := f.connect(worker, "agent=planner")
		if err == nil || !strings.Contains(err.Error(), "this token stands for agent worker; a request may not name another agent (planner)") {
			t.Fatalf("connect: %v", err)
		}
		code, _ := f.rawPost(worker, http.Header{"Workspace-Agent": {"planner"}}, "", []byte(initBody))
		if code != http.StatusForbidden {
			t.Fatalf("header: %d", code)
		}
		for _, args := range []map[string]any{
			{"key": "k", "value": 1, "agent": "planner"},
			{"key": "k", "value": 1, "stored_by": "planner"},
		} {
			text, isErr := callHTTP(t, cs, ToolStoreMemory, args)
			if !isErr || !strings.Contains(text, "you act as agent worker; a call may not name another agent") {
				t.Errorf("store_memory %v: %q", args, text)
			}
		}
	})
	t.Run("rights", func(t *testing.T) {
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}, `agent worker may not claim subtasks: its token does not hold the right "claim"`},
			{ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"summary": "x"}}, `may not report subtasks done`},
			{ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "a", "description": "b"}}}, `may not write plans`},
			{ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved"}, `may not write reviews`},
			{ToolStoreMemory, map[string]any{"key": "k", "value": 1, "scope": "global"}, "may not write the global memory (its token gives it no access)"},
			{ToolGetMemory, map[string]any{"key": "k", "scope": "global"}, "may not read the global memory"},
			{ToolListMemory, map[string]any{"scope": "global"}, "may not read the global memory"},
			{ToolPutMemoryItem, map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}}, "may not write the namespaced memory (its token gives it no global memory access)"},
			{ToolDeleteMemoryItem, map[string]any{"namespace": []string{"a"}, "key": "k"}, "may not write the namespaced memory"},
			{ToolGetMemoryItem, map[string]any{"namespace": []string{"a"}, "key": "k"}, "may not read the namespaced memory"},
			{ToolSearchMemory, nil, "may not read the namespaced memory"},
			{ToolMemoryNamespaces, nil, "may not read the namespaced memory"},
		} {
			text, isErr := callHTTP(t, cs, c.tool, c.args)
			if !isErr || !strings.Contains(text, c.want) || !strings.Contains(text, "hint: ") {
				t.Errorf("%s: %q", c.tool, text)
			}
		}
		// Nothing was written by the refused calls.
		if ents, err := readDir(f.w, "tasks/t1"); err == nil {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".claim.") || strings.HasPrefix(e.Name(), ".done.") {
					t.Errorf("a refused call left %s", e.Name())
				}
			}
		}
		// A reader with global read access reads it and may not write it.
		rs := f.mustConnect(both, "task=t1")
		if text, isErr := callHTTP(t, rs, ToolListMemory, map[string]any{"scope": "global"}); isErr {
			t.Errorf("global read: %s", text)
		}
		if text, isErr := callHTTP(t, rs, ToolStoreMemory, map[string]any{"key": "k", "value": 1, "scope": "global"}); !isErr || !strings.Contains(text, "read-only access") {
			t.Errorf("global write: %s", text)
		}
		if text, isErr := callHTTP(t, rs, ToolSearchMemory, nil); isErr || text != "[]" {
			t.Errorf("namespaced memory read: %s", text)
		}
		if text, isErr := callHTTP(t, rs, ToolPutMemoryItem, map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}}); !isErr || !strings.Contains(text, "read-only global memory access") {
			t.Errorf("namespaced memory write: %s", text)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		big := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"store_env_data","arguments":{"key":"k","short_description":"d","value":%q}}}`,
			strings.Repeat("a", int(f.h.MaxBodyBytes())))
		code, body := f.rawPost(worker, nil, "", []byte(big))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "request body exceeds") {
			t.Fatalf("%d %q", code, body[:min(len(body), 200)])
		}
		// Chunked, with no length given: the SDK's bound answers.
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", io.MultiReader(strings.NewReader(big)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+worker)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked: %d", resp.StatusCode)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		tok := f.token(tokens.Grant{Agent: "late", Tasks: []string{"t1"}})
		ls := f.mustConnect(tok, "")
		if text, isErr := callHTTP(t, ls, ToolListEnvData, nil); isErr {
			t.Fatalf("before the revocation: %s", text)
		}
		if _, err := tokens.Revoke(context.Background(), tokens.Tree(f.w), "", "late"); err != nil {
			t.Fatal(err)
		}
		_, err := ls.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolListEnvData})
		if err == nil || !strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("a call after the revocation: %v", err)
		}
	})
	t.Run("another token on the session", func(t *testing.T) {
		// A session is its token's: another token, even valid, cannot use it.
		tr := &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer{token: worker, next: http.DefaultTransport}}}
		s2, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "0"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		code, body := f.rawPost(both, http.Header{"Mcp-Session-Id": {s2.ID()}, "Mcp-Protocol-Version": {"2025-06-18"}}, "",
			[]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_env_data","arguments":{}}}`))
		if code != http.StatusForbidden {
			t.Fatalf("%d %q", code, body)
		}
	})
	// The first session still works after all that.
	if text, isErr := callHTTP(t, cs, ToolListEnvData, nil); isErr {
		t.Fatalf("the first session: %s", text)
	}
	log := f.log.String()
	for _, want := range []string{
		`reason="no bearer token"`,
		`reason="unknown or revoked token"`,
		`agent=worker`,
		`may not work on task t2`,
		`reason="refused: you act as agent worker; a call may not name another agent`,
		`may not claim subtasks`,
		`more than`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// TestHTTPGrantChangesApplyAtOnce: a grant narrowed in the agents file
// while a session is open refuses the session's next call.
func TestHTTPGrantChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{})
	tok := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: []string{tokens.RightClaim}})
	cs := f.mustConnect(tok, "task=t1")
	if text, isErr := callHTTP(t, cs, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}); isErr {
		t.Fatalf("claim: %s", text)
	}
	err := tokens.Update(context.Background(), f.w, "test", func(d *tokens.FileDoc) error {
		d.Tokens[0].Tasks = []string{"t2"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text, isErr := callHTTP(t, cs, ToolListEnvData, nil)
	if !isErr || !strings.Contains(text, "agent worker may not work on task t1: its token covers t2") {
		t.Fatalf("after the change: %q", text)
	}
}

// TestHTTPSessionBound: a thousand sessions opened at once are bounded,
// those beyond the bound refused with 503 and a message, while a session
// already open goes on being served; idle sessions expire.
func TestHTTPSessionBound(t *testing.T) {
	t.Parallel()
	const bound = 40
	// The token's own share is past what the flood can hold at once: a
	// request refused for the server's bound holds a slot of the token's
	// until it is refused, and a thousand of them in flight on a busy
	// machine would run into that share (429), which is not this test's.
	f := newHTTPFixture(t, HTTPOptions{MaxSessions: bound, SessionsPerToken: 2000, IdleTimeout: time.Hour})
	tok := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}})
	cs := f.mustConnect(tok, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var sample string
	stop, stopped := make(chan struct{}), make(chan error, 1)
	served := 0
	go func() {
		// The open session keeps calling while the others pile up; the
		// test reads its first failure once it has stopped it.
		for {
			select {
			case <-stop:
				stopped <- nil
				return
			default:
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolListEnvData})
			if err != nil {
				stopped <- err
				return
			}
			if !res.IsError {
				mu.Lock()
				served++
				mu.Unlock()
			}
		}
	}()
	for range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := f.rawPost(tok, nil, "", []byte(initBody))
			mu.Lock()
			codes[code]++
			if code == http.StatusServiceUnavailable {
				sample = body
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-stopped; err != nil {
		t.Fatalf("the open session during the flood: %v", err)
	}
	if codes[http.StatusOK] != bound-1 || codes[http.StatusServiceUnavailable] != 1000-(bound-1) {
		t.Fatalf("answers by status: %v, want %d × 200 and the rest 503", codes, bound-1)
	}
	if !strings.Contains(sample, fmt.Sprintf("too many sessions: %d are open", bound)) || !strings.Contains(sample, "hint: close a session") {
		t.Fatalf("a refusal: %q", sample)
	}
	if f.h.Sessions() != bound {
		t.Fatalf("%d sessions open, want %d", f.h.Sessions(), bound)
	}
	if text, isErr := callHTTP(t, cs, ToolGetTask, nil); isErr {
		t.Fatalf("the open session after the flood: %s", text)
	}
	mu.Lock()
	if served == 0 {
		t.Errorf("the open session was not served during the flood")
	}
	mu.Unlock()
	if !strings.Contains(f.log.String(), "too many sessions") {
		t.Errorf("no log line for the refused sessions")
	}
}

// TestHTTPIdleSessionsExpire: a session no request uses is closed after
// the idle timeout and no longer counted.
func TestHTTPIdleSessionsExpire(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{IdleTimeout: 50 * time.Millisecond})
	tok := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}})
	code, _ := f.rawPost(tok, nil, "", []byte(initBody))
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	eventually(t, "the idle session to expire", func() bool { return f.h.Sessions() == 0 })
}

// TestHTTPArguments: broken, huge, nested and hostile arguments over HTTP
// are tool errors that name the fault; the session goes on, and nothing
// is written.
func TestHTTPArguments(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{})
	tok := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: allRights})
	cs := f.mustConnect(tok, "")
	deep := any("x")
	for range 100 {
		deep = []any{deep}
	}
	cases := []struct {
		tool string
		args any
		want string
	}{
		{ToolStoreEnvData, map[string]any{"key": 5, "short_description": "d", "value": 1}, "key must be a string"},
		{ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d"}, "missing required argument value"},
		{ToolStoreEnvData, map[string]any{"key": strings.Repeat("k", 300), "short_description": "d", "value": 1}, "key"},
		{ToolStoreEnvData, map[string]any{"key": "k\x00", "short_description": "d", "value": 1}, "key"},
		{ToolStoreEnvData, map[string]any{"key": "deep", "short_description": "d", "value": deep}, "deep"},
		{ToolStoreMemory, map[string]any{"key": "k", "value": 1, "scope": "planet"}, `scope must be one of "agent", "session", "global", not "planet"`},
		{ToolClaimSubtask, map[string]any{"subtask_id": "../x"}, "subtask_id must be an id"},
		{ToolClaimSubtask, map[string]any{"subtask_id": []any{"a"}}, "subtask_id must be a string"},
		{ToolSignalDone, map[string]any{"subtask_id": "st_1", "output": map[string]any{"worker_id": "planner"}}, "may not name another agent (output.worker_id"},
		{ToolWritePlan, map[string]any{"subtasks": []any{map[string]any{"id": "a"}}}, "subtasks[0] lacks description"},
		{ToolWriteReview, map[string]any{"type": "plan_review", "verdict": "approved", "reviewer": "boss"}, "may not name another agent (reviewer"},
		{ToolGetTask, map[string]any{"task": "t2"}, "this session serves task t1, not t2"},
		{ToolGetTask, map[string]any{"tusk": "t1"}, `unknown argument "tusk"`},
		{ToolUpdateEnvData, map[string]any{"key": "k", "if_version": 0}, "if_version must be at least 1"},
		{ToolGetPlan, map[string]any{"version": "1"}, "version must be an integer"},
	}
	for _, c := range cases {
		text, isErr := callHTTP(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s(%.80v) = %q, want a tool error with %q", c.tool, c.args, text, c.want)
		}
	}
	// Arguments that are not an object at all, sent raw.
	for _, raw := range []string{`[1,2]`, `"str"`, `1e999`, `{"key":`} {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_env_data","arguments":` + raw + `}}`
		code, _ := f.rawPost(tok, http.Header{"Mcp-Session-Id": {cs.ID()}, "Mcp-Protocol-Version": {"2025-06-18"}}, "", []byte(body))
		if code >= 500 {
			t.Errorf("arguments %s: status %d", raw, code)
		}
	}
	items, err := f.w.ListEntries(context.Background(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"})
	if err != nil || len(items) != 0 {
		t.Fatalf("refused calls wrote %v (%v)", items, err)
	}
	if text, isErr := callHTTP(t, cs, ToolListEnvData, nil); isErr || text != "[]" {
		t.Fatalf("after the bad calls: %q", text)
	}
}

// TestStdioGrants: a server given Grants (stdio with a token) applies the
// same rules, and a revocation at the next call.
func TestStdioGrants(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	tok, _, err := tokens.Add(context.Background(), tokens.Tree(w), tokens.Grant{Agent: "observer", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := tokens.NewStore(w.Root())
	if err != nil {
		t.Fatal(err)
	}
	var logBuf syncLog
	cs := connect(t, w, Options{TaskID: "t1", Agent: "observer", Log: slog.New(slog.NewTextHandler(&logBuf, nil)),
		Grants: func(*mcp.RequestExtra) (tokens.Grant, error) { return store.Lookup(tok) }})
	if text, isErr := call(t, cs, ToolListEnvData, nil); isErr {
		t.Fatalf("list: %s", text)
	}
	if text, isErr := call(t, cs, ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}); !isErr || !strings.Contains(text, "may not claim subtasks") {
		t.Fatalf("claim: %s", text)
	}
	if _, err := tokens.Revoke(context.Background(), tokens.Tree(w), "", "observer"); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, ToolListEnvData, nil); !isErr || !strings.Contains(text, "no longer valid: unknown or revoked token") {
		t.Fatalf("after the revocation: %s", text)
	}
	if !strings.Contains(logBuf.String(), "agent=observer") {
		t.Fatalf("log: %s", logBuf.String())
	}
}

// readDir lists a directory of the tree.
func readDir(w *files.Store, rel string) ([]fs.DirEntry, error) {
	d, err := w.Root().Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
