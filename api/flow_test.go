package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// server is the API over st behind gate, on a real listener.
func server(t testing.TB, st workspace.Store, gate *httpauth.Gate) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(Config{Store: st, Gate: gate, KeepAlive: time.Second, PollEvery: 20 * time.Millisecond, Log: quiet}))
	t.Cleanup(srv.Close)
	return srv
}

// serveDaemon runs the real daemon in-process over st.
func serveDaemon(t *testing.T, st workspace.Store) {
	t.Helper()
	served, wake, err := service.Serve(st, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	servetest.Start(t, served, daemon.Config{Rescan: time.Second, Wake: wake})
}

// client sends requests as one agent: by its token, or by the header on
// a trusted listener.
type client struct {
	t     *testing.T
	base  string
	token string
	agent string
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("response %d does not parse: %v\n%s", a.status, err, a.body)
	}
}

// problem is the answer's problem, checked to be problem+json.
func (a answer) problem(t *testing.T) Problem {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want application/problem+json: %s", a.status, ct, a.body)
	}
	var p Problem
	a.json(t, &p)
	if p.Status != a.status || p.Kind == "" || p.Detail == "" || p.Type != ProblemType(p.Kind) {
		t.Fatalf("problem %+v does not match status %d", p, a.status)
	}
	return p
}

func (c client) do(method, path string, body any, hdr ...string) answer {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.agent != "" {
		req.Header.Set(httpauth.HeaderAgent, c.agent)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// want fails the test unless a has status.
func (c client) want(a answer, status int, what string) answer {
	c.t.Helper()
	if a.status != status {
		c.t.Fatalf("%s: status %d, want %d: %s", what, a.status, status, a.body)
	}
	return a
}

func as(t *testing.T, srv *httptest.Server, agent string) client {
	return client{t: t, base: srv.URL, agent: agent}
}

// TestFlow runs a task from creation to done through the API on every
// store, with the real daemon deciding: a plan proposed and approved, a
// subtask claimed (won, then lost by another), its output delivered, and
// the verdicts returned; documents read back; the events read by cursor.
func TestFlow(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			serveDaemon(t, st)
			srv := server(t, st, &httpauth.Gate{TrustLoopback: true})
			planner, reviewer, w1, w2 := as(t, srv, "planner"), as(t, srv, "reviewer"), as(t, srv, "worker_1"), as(t, srv, "worker_2")

			var who callerView
			planner.want(planner.do("GET", "/api/v1/agent", nil), 200, "who am I").json(t, &who)
			if who.Agent != "planner" || who.Token != "" || len(who.May) != len(tokens.Rights()) {
				t.Fatalf("caller %+v", who)
			}
			a := planner.want(planner.do("POST", "/api/v1/tasks", map[string]any{"id": "t1", "description": "the flow"}), 201, "create")
			if a.header.Get("Location") != "/api/v1/tasks/t1" {
				t.Errorf("Location %q", a.header.Get("Location"))
			}
			var list taskList
			planner.want(planner.do("GET", "/api/v1/tasks", nil), 200, "list").json(t, &list)
			if list.Total != 1 || list.Tasks[0].Task.ID != "t1" {
				t.Fatalf("tasks %+v", list)
			}
			planner.want(planner.do("GET", "/api/v1/tasks/t1", nil), 200, "show")

			plan := map[string]any{"summary": "one step", "subtasks": []map[string]any{{"id": "s1", "description": "do it"}}}
			var d delivery
			planner.want(planner.do("POST", "/api/v1/tasks/t1/plan?propose=true&wait=30s", plan), 200, "propose").json(t, &d)
			if d.Stands != service.Decided || d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictApplied || d.Version != 1 || d.Product != "plan.json" {
				t.Fatalf("proposed plan: %+v", d)
			}
			review := map[string]any{"id": "plan_review_1", "type": "plan_review", "verdict": "approved"}
			reviewer.want(reviewer.do("PUT", "/api/v1/tasks/t1/reviews/plan_review_1?done=true&wait=30s", review), 200, "approve").json(t, &d)
			if d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictApplied {
				t.Fatalf("approval: %+v", d)
			}
			w1.want(w1.do("POST", "/api/v1/tasks/t1/claims", map[string]any{"subtask": "s1", "wait": "30s"}), 200, "claim").json(t, &d)
			if d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictWon || d.Verdict.Worker != "worker_1" {
				t.Fatalf("first claim: %+v", d)
			}
			w2.want(w2.do("POST", "/api/v1/tasks/t1/claims", map[string]any{"subtask": "s1", "wait": "30s"}), 200, "claim again").json(t, &d)
			if d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictLost || d.Verdict.Reason == "" {
				t.Fatalf("second claim: %+v", d)
			}
			w1.want(w1.do("PUT", "/api/v1/tasks/t1/outputs/s1?done=true&wait=30s", map[string]any{"summary": "done"}), 200, "deliver").json(t, &d)
			if d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictApplied || d.Product != "outputs/s1.json" {
				t.Fatalf("delivery: %+v", d)
			}
			var out map[string]any
			w1.want(w1.do("GET", "/api/v1/tasks/t1/outputs/s1", nil), 200, "read output").json(t, &out)
			if out["worker_id"] != "worker_1" || out["summary"] != "done" {
				t.Fatalf("output %v", out)
			}
			w1.want(w1.do("GET", "/api/v1/tasks/t1/plan", nil), 200, "read plan")
			w1.want(w1.do("GET", "/api/v1/tasks/t1/plan?version=1", nil), 200, "read plan v1, the current one")
			w1.want(w1.do("GET", "/api/v1/tasks/t1/plan?version=2", nil), 404, "read plan v2, never written").problem(t)
			w1.want(w1.do("GET", "/api/v1/tasks/t1/reviews/plan_review_1", nil), 200, "read review")
			var sum struct {
				State *workspace.State `json:"state"`
			}
			w1.want(w1.do("GET", "/api/v1/tasks/t1", nil), 200, "show").json(t, &sum)
			if sum.State == nil || sum.State.Status != "completed" {
				t.Fatalf("task after its one subtask: %+v", sum.State)
			}
			// A finished task takes no marker: 409 with the CLI's hint.
			p := w1.want(w1.do("POST", "/api/v1/tasks/t1/done", map[string]any{"status": "cancelled"}), 409, "done on a finished task").problem(t)
			if p.Kind != kindConflict || !strings.Contains(p.Hint, "finished task") {
				t.Errorf("problem %+v", p)
			}

			// A cancel through done, on a task of its own, applied.
			planner.want(planner.do("POST", "/api/v1/tasks", map[string]any{"id": "t2", "description": "to cancel"}), 201, "create t2")
			planner.want(planner.do("POST", "/api/v1/tasks/t2/done", map[string]any{"status": "cancelled", "error": "not needed", "wait": "30s"}), 200, "cancel").json(t, &d)
			if d.Verdict == nil || d.Verdict.Verdict != workspace.VerdictApplied || d.Verdict.TaskStatus != "cancelled" {
				t.Fatalf("cancel: %+v", d)
			}

			var page eventPage
			w1.want(w1.do("GET", "/api/v1/tasks/t1/events?after=0&limit=1000", nil), 200, "events").json(t, &page)
			if len(page.Events) < 5 || page.Next != page.Events[len(page.Events)-1].End {
				t.Fatalf("events: %d, next %d", len(page.Events), page.Next)
			}
			var rest eventPage
			w1.want(w1.do("GET", "/api/v1/tasks/t1/events?after="+itoa(page.Next), nil), 200, "events after the last").json(t, &rest)
			if len(rest.Events) != 0 || rest.Next != page.Next {
				t.Fatalf("events after the last: %+v", rest)
			}
			var bundle map[string]any
			w1.want(w1.do("GET", "/api/v1/threads/t1/context?budget=2000", nil), 200, "context").json(t, &bundle)
			if bundle["thread"] != "t1" || bundle["text"] == "" {
				t.Fatalf("context %v", bundle)
			}
			w1.want(w1.do("GET", "/api/v1/threads/t1/preamble?detail=minimal", nil), 200, "preamble")
			w1.want(w1.do("GET", "/api/v1/threads/nope/context", nil), 404, "context of no thread").problem(t)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
