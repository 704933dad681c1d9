package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestBadInput: bad bodies, huge and deeply nested ones, malicious ids,
// keys and headers are refused with a problem (400, 404, 405, 413, 415,
// 501) naming their kind, and nothing is written.
func TestBadInput(t *testing.T) {
	st := newTreeStore(t)
	if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "bad input"}); err != nil {
		t.Fatal(err)
	}
	c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
	limit := st.Settings().Limits
	deep := strings.Repeat("[", limit.MaxDepth+5) + strings.Repeat("]", limit.MaxDepth+5)
	huge := `{"value": "` + strings.Repeat("x", limit.ValueMaxBytes+2*bodySlack) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		hdr                []string
		status             int
		kind               string
	}{
		{"not JSON", "PUT", "/api/v1/tasks/t1/env/k", "{nope", nil, 400, kindInvalid},
		{"an unknown field", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1, "owner": "root"}`, nil, 400, kindInvalid},
		{"no value", "PUT", "/api/v1/tasks/t1/env/k", `{"short_description": "x"}`, nil, 400, kindInvalid},
		{"two documents", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1} {"value": 2}`, nil, 400, kindInvalid},
		{"an empty body", "PUT", "/api/v1/tasks/t1/env/k", "", nil, 400, kindInvalid},
		{"nested too deep", "PUT", "/api/v1/tasks/t1/env/k", `{"value": ` + deep + `}`, nil, 400, kindInvalid},
		{"a nested plan", "POST", "/api/v1/tasks/t1/plan", `{"subtasks": ` + deep + `}`, nil, 400, kindInvalid},
		{"a body over the bound", "PUT", "/api/v1/tasks/t1/env/k", huge, nil, 413, kindTooLarge},
		{"an output over the largest file", "PUT", "/api/v1/tasks/t1/outputs/s1", `{"summary": "` + strings.Repeat("x", limit.MaxFileBytes+2*bodySlack) + `"}`, nil, 413, kindTooLarge},
		{"a value over the limit", "PUT", "/api/v1/tasks/t1/env/k", `{"value": "` + strings.Repeat("x", limit.ValueMaxBytes+10) + `"}`, nil, 400, kindInvalid},
		{"not JSON by its type", "PUT", "/api/v1/tasks/t1/env/k", []byte(`value=1`), []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, kindMediaType},
		{"a task id that is a path", "GET", "/api/v1/tasks/..%2F..%2Fetc/env", nil, nil, 400, kindInvalid},
		{"a task id with a NUL", "GET", "/api/v1/tasks/t%001", nil, nil, 400, kindInvalid},
		{"no such task", "GET", "/api/v1/tasks/t9", nil, nil, 404, kindNotFound},
		{"no such thread", "GET", "/api/v1/tasks/t1/threads/th9/session", nil, nil, 404, kindNotFound},
		{"a description not UTF-8", "PUT", "/api/v1/tasks/t1/env/k", "{\"value\": 1, \"short_description\": \"bad\xffdesc\"}", nil, 400, kindInvalid},
		{"a lone surrogate", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1, "short_description": "bad\udcffdesc"}`, nil, 400, kindInvalid},
		{"a key not UTF-8", "GET", "/api/v1/tasks/t1/env/bad%FFkey", nil, nil, 400, kindInvalid},
		{"a key with a control character", "GET", "/api/v1/tasks/t1/env/a%0Ab", nil, nil, 400, kindInvalid},
		{"a key too long", "GET", "/api/v1/tasks/t1/env/" + strings.Repeat("k", 300), nil, nil, 400, kindInvalid},
		{"an If-Match that is no version", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1}`, []string{"If-Match", `"abc"`}, 400, kindInvalid},
		{"an If-None-Match that is not *", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1}`, []string{"If-None-Match", `"1"`}, 400, kindInvalid},
		{"both preconditions", "PUT", "/api/v1/tasks/t1/env/k", `{"value": 1}`, []string{"If-Match", `"1"`, "If-None-Match", "*"}, 400, kindInvalid},
		{"a delete with If-None-Match", "DELETE", "/api/v1/tasks/t1/env/k", ``, []string{"If-None-Match", "*"}, 400, kindInvalid},
		{"a memory delete with If-None-Match", "DELETE", "/api/v1/memory/items?namespace=a&key=k", ``, []string{"If-None-Match", "*"}, 400, kindInvalid},
		{"a wait that is no duration", "POST", "/api/v1/tasks/t1/claims", `{"subtask": "s1", "wait": "forever"}`, nil, 400, kindInvalid},
		{"a wait too long", "POST", "/api/v1/tasks/t1/claims", `{"subtask": "s1", "wait": "2h"}`, nil, 400, kindInvalid},
		{"a wait with no marker", "PUT", "/api/v1/tasks/t1/outputs/s1?wait=1s", `{"summary": "x"}`, nil, 400, kindInvalid},
		{"a claim of no subtask id", "POST", "/api/v1/tasks/t1/claims", `{"subtask": "a b"}`, nil, 400, kindInvalid},
		{"a done with a bad status", "POST", "/api/v1/tasks/t1/done", `{"output_file": "plan.json", "status": "maybe"}`, nil, 400, kindInvalid},
		{"a done with no product", "POST", "/api/v1/tasks/t1/done", `{}`, nil, 400, kindInvalid},
		{"a schema-invalid output", "PUT", "/api/v1/tasks/t1/outputs/s1", `{"status": "sideways"}`, nil, 400, kindInvalid},
		{"a limit out of range", "GET", "/api/v1/tasks?limit=0", nil, nil, 400, kindInvalid},
		{"an after that is no position", "GET", "/api/v1/tasks/t1/events?after=-1", nil, nil, 400, kindInvalid},
		{"a Last-Event-ID that is no position", "GET", "/api/v1/tasks/t1/events", nil, []string{"Last-Event-ID", "t1:5"}, 400, kindInvalid},
		{"a boolean that is not one", "POST", "/api/v1/tasks/t1/plan?propose=maybe", `{"subtasks": []}`, nil, 400, kindInvalid},
		{"no such route", "GET", "/api/v1/nothing", nil, nil, 404, kindNotFound},
		{"a method no route has", "PATCH", "/api/v1/tasks/t1", nil, nil, 405, kindMethod},
		{"a method the API does not know", "PROPFIND", "/api/v1/tasks", nil, nil, 501, kindNotImplemented},
		{"a search with an unknown field", "POST", "/api/v1/memory/search", `{"query": "semantic"}`, nil, 400, kindInvalid},
		{"a search with an unknown operator", "POST", "/api/v1/memory/search", `{"filter": {"a": {"$regex": "x"}}}`, nil, 400, kindInvalid},
		{"a listing too deep", "POST", "/api/v1/memory/namespaces", `{"max_depth": 99}`, nil, 400, kindInvalid},
		{"a listing of depth 0", "POST", "/api/v1/memory/namespaces", `{"max_depth": 0}`, nil, 400, kindInvalid},
		{"a listing of limit 0", "POST", "/api/v1/memory/namespaces", `{"limit": 0}`, nil, 400, kindInvalid},
		{"a search of limit 0", "POST", "/api/v1/memory/search", `{"limit": 0}`, nil, 400, kindInvalid},
		{"a search of a negative limit", "POST", "/api/v1/memory/search", `{"limit": -3}`, nil, 400, kindInvalid},
		{"a namespace of 17 labels", "GET", "/api/v1/memory/items?key=k" + strings.Repeat("&namespace=a", 17), nil, nil, 400, kindInvalid},
		{"an item that is no object", "PUT", "/api/v1/memory/items?namespace=a&key=k", `{"value": [1]}`, nil, 400, kindInvalid},
		{"an item with a negative TTL", "PUT", "/api/v1/memory/items?namespace=a&key=k", `{"value": {}, "ttl_seconds": -1}`, nil, 400, kindInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.t = t
			p := c.want(c.do(tc.method, tc.path, tc.body, tc.hdr...), tc.status, tc.method+" "+tc.path).problem(t)
			if p.Kind != tc.kind {
				t.Errorf("kind %q, want %q: %+v", p.Kind, tc.kind, p)
			}
			if p.Hint == "" {
				t.Errorf("no hint: %+v", p)
			}
		})
	}
	// A document over the value limit but within the largest file is
	// taken, as the CLI takes it.
	big := `{"summary": "` + strings.Repeat("x", limit.ValueMaxBytes+10) + `"}`
	c.want(c.do("PUT", "/api/v1/tasks/t1/outputs/s1", big), 200, "an output over the value limit")
	if items, err := st.ListEntries(t.Context(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}); err != nil || len(items) != 0 {
		t.Errorf("refused writes left entries: %v %+v", err, items)
	}
}

// FuzzEntryPut sends arbitrary bodies and preconditions to an entry's
// PUT: the answer is a stored entry or a problem (never a 500, never a
// panic), and a refusal writes nothing.
func FuzzEntryPut(f *testing.F) {
	for _, s := range []string{`{"value": 1}`, `{"value": {"a": [1, 2]}, "short_description": "d"}`, `{"value": "é\u0000"}`, `[[[[`, `{"value": 1}{`, `{"short_description": 1}`, `null`, `{"value": 1e999}`} {
		f.Add([]byte(s), "", "")
	}
	f.Add([]byte(`{"value": true}`), `"1"`, "")
	f.Add([]byte(`{"value": true}`), "", "*")
	f.Add([]byte(`{"value": true}`), `W/"7"`, "*")
	st := newTreeStore(f)
	if _, err := st.CreateTask(f.Context(), workspace.NewTaskRequest{ID: "t1", Description: "fuzz"}); err != nil {
		f.Fatal(err)
	}
	h := New(Config{Store: st, Gate: &httpauth.Gate{TrustLoopback: true}, Log: quiet})
	f.Fuzz(func(t *testing.T, body []byte, ifMatch, ifNoneMatch string) {
		r := httptest.NewRequest("PUT", "/api/v1/tasks/t1/env/fuzz", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Host = "127.0.0.1:7070"
		if ifMatch != "" {
			r.Header["If-Match"] = []string{ifMatch}
		}
		if ifNoneMatch != "" {
			r.Header["If-None-Match"] = []string{ifNoneMatch}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code >= 400 && rec.Code < 500:
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%d with %q", rec.Code, ct)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// TestWriteProblem: a listener's own refusal of an API request is a
// problem too, its kind the status's.
func TestWriteProblem(t *testing.T) {
	for status, kind := range map[int]string{429: kindTooMany, 403: kindForbidden, 503: kindUnavailable, 401: kindUnauthorized} {
		rec := httptest.NewRecorder()
		WriteProblem(rec, httptest.NewRequest("GET", "/api/v1/tasks", nil), status, "refused", "wait")
		a := answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		if p := a.problem(t); p.Kind != kind || p.Hint != "wait" || p.Instance != "/api/v1/tasks" {
			t.Errorf("%d: %+v", status, p)
		}
	}
}

// FuzzMemorySearch sends arbitrary search bodies: the answer is a list
// or a problem, never a 500 or a panic.
func FuzzMemorySearch(f *testing.F) {
	for _, s := range []string{`{}`, `{"namespace_prefix": ["a"], "filter": {"x": 1}}`, `{"filter": {"x": {"$gt": "a", "$lt": 3}}}`,
		`{"filter": {"x": {"$ne": null}}, "limit": 1000, "offset": 5}`, `{"namespace_prefix": ["\u0000"]}`, `{"filter": []}`, `{"limit": -1}`} {
		f.Add([]byte(s))
	}
	st := newTreeStore(f)
	h := New(Config{Store: st, Gate: &httpauth.Gate{TrustLoopback: true}, Log: quiet})
	put := httptest.NewRequest("PUT", "/api/v1/memory/items?namespace=a&key=k", strings.NewReader(`{"value": {"x": 2, "y": "b"}}`))
	put.Header.Set("Content-Type", "application/json")
	put.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, put)
	if rec.Code != 200 {
		f.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(postAnswers(h, "/api/v1/memory/search"))
}

// postAnswers is a fuzz target that POSTs a body to route on h: every
// answer is 200, or 400 or 413 as application/problem+json.
func postAnswers(h http.Handler, route string) func(t *testing.T, body []byte) {
	return func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", route, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code == http.StatusBadRequest || rec.Code == http.StatusRequestEntityTooLarge:
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%d with %q", rec.Code, ct)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	}
}
