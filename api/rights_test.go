package api

import (
	"net/http/httptest"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// TestTokenRights: with tokens, a token is an agent with its rights, and
// the API refuses (403, problem+json) what it may not do, as the MCP
// tools do; no token or an unknown one is a 401 with WWW-Authenticate; a
// revoked token is refused at once.
func TestTokenRights(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			for _, id := range []string{"t1", "t2"} {
				if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: id, Description: "rights"}); err != nil {
					t.Fatal(err)
				}
			}
			keeper, err := service.Tokens("test", st)
			if err != nil {
				t.Fatal(err)
			}
			add := func(g tokens.Grant) string {
				tok, _, err := tokens.Add(t.Context(), keeper, g)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			reader := add(tokens.Grant{Agent: "reader", Tasks: []string{"t1"}, GlobalMemory: tokens.GlobalRead})
			worker := add(tokens.Grant{Agent: "worker_1", Tasks: []string{"t1"}, May: []string{tokens.RightClaim, tokens.RightDone}, GlobalMemory: tokens.GlobalWrite})
			boss := add(tokens.Grant{Agent: "boss", Tasks: []string{tokens.AllTasks}, May: tokens.Rights()})
			srv := server(t, st, &httpauth.Gate{Keeper: keeper})
			with := func(tok string) client { return client{t: t, base: srv.URL, token: tok} }
			r, w, b := with(reader), with(worker), with(boss)
			anon := client{t: t, base: srv.URL}
			plan := map[string]any{"subtasks": []map[string]any{{"id": "s1", "description": "x"}}}
			batch := map[string]any{"puts": []any{map[string]any{"namespace": []string{"n"}, "key": "k", "value": map[string]any{}}}}
			cases := []struct {
				name   string
				c      client
				method string
				path   string
				body   any
				hdr    []string
				status int
			}{
				{"no token", anon, "GET", "/api/v1/tasks", nil, nil, 401},
				{"a header instead of a token", client{t: t, base: srv.URL, agent: "boss"}, "GET", "/api/v1/tasks", nil, nil, 401},
				{"an unknown token", with("wsd_nope"), "GET", "/api/v1/tasks", nil, nil, 401},
				{"another agent named", client{t: t, base: srv.URL, token: worker, agent: "boss"}, "GET", "/api/v1/agent", nil, nil, 403},
				{"a task not covered", r, "GET", "/api/v1/tasks/t2", nil, nil, 403},
				{"entries of a task not covered", w, "PUT", "/api/v1/tasks/t2/env/k", map[string]any{"value": 1}, nil, 403},
				{"a task covered", r, "GET", "/api/v1/tasks/t1", nil, nil, 200},
				{"claim without the right", r, "POST", "/api/v1/tasks/t1/claims", map[string]any{"subtask": "s1"}, nil, 403},
				{"done without the right", r, "POST", "/api/v1/tasks/t1/done", map[string]any{"status": "cancelled"}, nil, 403},
				{"a plan without the right", w, "POST", "/api/v1/tasks/t1/plan", plan, nil, 403},
				{"a review without the right", w, "PUT", "/api/v1/tasks/t1/reviews/r1", map[string]any{"type": "plan_review", "verdict": "approved"}, nil, 403},
				{"an output and done without done", r, "PUT", "/api/v1/tasks/t1/outputs/s1?done=true", map[string]any{"summary": "x"}, nil, 403},
				{"a plan with the right", b, "POST", "/api/v1/tasks/t1/plan", plan, nil, 200},
				{"global memory read-only, written", r, "PUT", "/api/v1/memory/global/k", map[string]any{"value": 1}, nil, 403},
				{"global memory read-only, read", r, "GET", "/api/v1/memory/global", nil, nil, 200},
				{"global memory with no access, read", b, "GET", "/api/v1/memory/global/k", nil, nil, 403},
				{"global memory written", w, "PUT", "/api/v1/memory/global/k", map[string]any{"value": 1}, nil, 200},
				{"a memory batch read-only", r, "POST", "/api/v1/memory/batch", batch, nil, 403},
				{"a memory batch with no access", b, "POST", "/api/v1/memory/batch", batch, nil, 403},
				{"a memory batch written", w, "POST", "/api/v1/memory/batch", batch, nil, 200},
				{"another agent's memory", w, "GET", "/api/v1/memory/agents/boss", nil, nil, 403},
				{"its own memory", w, "PUT", "/api/v1/memory/agents/worker_1/k", map[string]any{"value": 1}, nil, 200},
				{"a task created without every task", w, "POST", "/api/v1/tasks", map[string]any{"description": "x"}, nil, 403},
				{"a task created over every task", b, "POST", "/api/v1/tasks", map[string]any{"description": "x"}, nil, 201},
				{"context of a thread not covered", r, "GET", "/api/v1/threads/t2/context", nil, nil, 403},
				{"events of a task not covered", r, "GET", "/api/v1/tasks/t2/events", nil, nil, 403},
				{"the document needs no token", anon, "GET", "/api/v1/openapi.json", nil, nil, 200},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					c := tc.c
					c.t = t
					a := c.want(c.do(tc.method, tc.path, tc.body, tc.hdr...), tc.status, tc.method+" "+tc.path)
					if tc.status >= 400 {
						p := a.problem(t)
						if p.Hint == "" {
							t.Errorf("refusal without a hint: %+v", p)
						}
						if tc.status == 401 && a.header.Get("WWW-Authenticate") == "" {
							t.Error("401 without WWW-Authenticate")
						}
					}
				})
			}
			// Tasks listed are the ones the token covers.
			var list taskList
			r.want(r.do("GET", "/api/v1/tasks", nil), 200, "list").json(t, &list)
			if list.Total != 1 || list.Tasks[0].Task.ID != "t1" {
				t.Errorf("reader lists %+v, want t1 alone", list)
			}
			// A revoked token is refused from the next request on.
			if _, err := tokens.Revoke(t.Context(), keeper, "", "reader"); err != nil {
				t.Fatal(err)
			}
			r.want(r.do("GET", "/api/v1/tasks/t1", nil), 401, "a revoked token").problem(t)
		})
	}
}

// TestTrustedLoopbackChecksHost: a listener that trusts its loopback
// refuses a request naming another host (a page rebinding its name to
// 127.0.0.1), and a bad agent name.
func TestTrustedLoopbackChecksHost(t *testing.T) {
	st := newTreeStore(t)
	h := New(Config{Store: st, Gate: &httpauth.Gate{TrustLoopback: true}, Log: quiet})
	for _, tc := range []struct {
		host, agent string
		status      int
	}{
		{"127.0.0.1:7070", "", 200},
		{"localhost:7070", "planner", 200},
		{"[::1]:7070", "", 200},
		{"evil.example:7070", "", 403},
		{"127.0.0.1:7070", "../../etc", 400},
	} {
		r := httptest.NewRequest("GET", "/api/v1/agent", nil)
		r.Host = tc.host
		if tc.agent != "" {
			r.Header.Set(httpauth.HeaderAgent, tc.agent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.status {
			t.Errorf("Host %s, agent %q: %d, want %d: %s", tc.host, tc.agent, rec.Code, tc.status, rec.Body)
		}
	}
}
