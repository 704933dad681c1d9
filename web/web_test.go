package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// seed gives the panel's workspace a task t1 with env data, a session
// entry of its root thread, a thread, events, and an entry of global and
// agent memory.
func seed(t *testing.T, ws *files.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := ws.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "first task"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: "t1"}, workspace.StoreRequest{Key: "draft", Description: "a private draft", Value: []byte(`"half"`), Agent: "solver"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}, workspace.StoreRequest{Key: "arc/task", Description: "the puzzle", Value: []byte(`{"grid":[[1]]}`), Agent: "solver"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "style", Description: "how to answer", Value: []byte(`"short"`), Agent: "po"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeAgent, Agent: "observer"}, workspace.StoreRequest{Key: "seen", Description: "what it saw", Value: []byte(`1`), Agent: "observer"}); err != nil {
		t.Fatal(err)
	}
}

// TestRoutes: every read route answers JSON shaped like the files; bad
// ids, traversal attempts and missing tasks get a JSON error.
func TestRoutes(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	seed(t, p.ws)
	if _, _, err := friction.Open(p.ws, "x").Add(context.Background(), friction.Entry{Type: "escalation", Description: "help", AffectedTasks: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "t1 in the index", 5*time.Second, func() bool { _, ok := p.s.index.get("t1"); return ok })
	ok := []struct {
		path string
		want string // a substring of the body
	}{
		{"/api/tasks", `"id":"t1"`},
		{"/api/tasks?status=waiting&q=FIRST", `"total":1`},
		{"/api/tasks?q=nothing-like-it", `"total":0`},
		{"/api/tasks/t1", `"description":"first task"`},
		{"/api/tasks/t1/plans", `"versions":[]`},
		{"/api/tasks/t1/reviews", `"reviews":[]`},
		{"/api/tasks/t1/threads", `"id":"t1"`},
		{"/api/tasks/t1/env", `"key":"arc/task"`},
		{"/api/tasks/t1/env/arc%2Ftask", `"value":{"grid":[[1]]}`},
		{"/api/tasks/t1/journal", `[]`},
		{"/api/tasks/t1/sessions", `[{"thread":"t1","items":[{"key":"draft"`},
		{"/api/tasks/t1/sessions/t1/draft", `"value":"half"`},
		{"/api/tasks/t1/backups", `[]`},
		{"/api/tasks/t1/events", `"event":"env_stored"`},
		{"/api/tasks/t1/events?after=0", `"id":"t1:`},
		{"/api/events", `"event":"task_created"`},
		{"/api/events?task=t1&limit=1", `"event":"env_stored"`},
		{"/api/friction", `"id":"friction_001"`},
		{"/api/friction?status=applied", `[]`},
		{"/api/memory", `"observer":[{"key":"seen"`},
		{"/api/memory/global/style", `"value":"short"`},
		{"/api/memory/agents/observer/seen", `"value":1`},
	}
	for _, c := range ok {
		r := p.get(c.path)
		if r.code != 200 || !strings.Contains(r.body, c.want) || !strings.HasPrefix(r.h.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %s\n%s", c.path, r.code, r.h.Get("Content-Type"), r.body)
		}
	}
	bad := []struct {
		path string
		code int
	}{
		{"/api/tasks/nope", 404},
		{"/api/tasks/nope/events", 404},
		{"/api/tasks/nope/env", 404},
		{"/api/tasks/..%2F..%2Fetc", 400},
		{"/api/tasks/..%2Ft1/env", 400},
		{"/api/tasks/.hidden", 400},
		{"/api/tasks/t1%00/env", 400},
		{"/api/tasks/" + strings.Repeat("a", 200), 400},
		{"/api/tasks/t1/env/..%2F..%2F..%2Fworkspace.json", 404},
		{"/api/tasks/t1/env/missing", 404},
		{"/api/tasks/t1/outputs/st_1", 404},
		{"/api/tasks/t1/outputs/..%2Fstate", 400},
		{"/api/tasks/t1/events?after=-1", 400},
		{"/api/tasks/t1/events?after=abc", 400},
		{"/api/tasks?limit=1000000", 400},
		{"/api/memory/agents/..%2F..%2Ftasks/x", 400},
		{"/api/memory/global/nope", 404},
		{"/api/events?task=..", 400},
		{"/api/nothing-here", 404},
	}
	for _, c := range bad {
		r := p.get(c.path)
		var e apiError
		if r.code != c.code {
			t.Errorf("GET %s: %d, want %d: %s", c.path, r.code, c.code, r.body)
			continue
		}
		r.json(t, &e)
		if e.Error == "" {
			t.Errorf("GET %s: no error message: %s", c.path, r.body)
		}
	}
	// An events.log that is a symlink is refused, not followed.
	if _, err := p.ws.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t2", Description: "linked"}); err != nil {
		t.Fatal(err)
	}
	log2 := filepath.Join(p.ws.Dir(), "tasks/t2/events.log")
	if err := os.Remove(log2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../t1/events.log", log2); err != nil {
		t.Fatal(err)
	}
	if r := p.get("/api/tasks/t2/events"); r.code != 400 || !strings.Contains(r.body, "symlink") {
		t.Errorf("a symlinked events.log: %d %s", r.code, r.body)
	}
	// A Last-Event-ID of another task is refused.
	if r := p.do(nil, "GET", "/api/tasks/t1/events", "", map[string]string{"Last-Event-ID": "t2:10"}); r.code != 400 {
		t.Errorf("a foreign Last-Event-ID: %d %s", r.code, r.body)
	}
	// Pages and assets.
	for _, path := range []string{"/", "/tasks/t1", "/memory", "/friction", "/assets/app.js", "/assets/task.js", "/assets/app.css"} {
		r := p.get(path)
		if r.code != 200 || r.h.Get("Content-Security-Policy") != csp || r.h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, CSP %q", path, r.code, r.h.Get("Content-Security-Policy"))
		}
	}
	if r := p.get("/assets/"); r.code != 404 {
		t.Errorf("an asset directory listing: %d", r.code)
	}
	if r := p.get("/assets/..%2Fpages.go"); r.code == 200 {
		t.Errorf("an asset outside assets/: %d %s", r.code, r.body)
	}
	// The task page's first paint carries what agents wrote only as
	// html/template escaped it, and never an inline script.
	evil := `</p><script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	if _, err := p.ws.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t_evil", Description: evil}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/tasks/t1": "first task", "/tasks/t_evil": "&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;&amp;"} {
		r := p.get(path)
		if !strings.Contains(r.body, `<p id="description">`+want+`</p>`) || strings.Contains(r.body, "<script>") || strings.Contains(r.body, "<img") {
			t.Errorf("%s: the first paint holds agent data unescaped, an inline script, or not the task:\n%s", path, r.body)
		}
	}
	// An unknown task is painted by the script, which says why.
	if r := p.get("/tasks/nope"); r.code != 200 || strings.Contains(r.body, "first-paint") {
		t.Errorf("/tasks/nope: %d\n%s", r.code, r.body)
	}
	// The favicon, as browsers ask for it and as the pages link it.
	for _, path := range []string{"/favicon.ico", "/assets/favicon.svg"} {
		if r := p.get(path); r.code != 200 || r.h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(r.body, "<svg") {
			t.Errorf("GET %s: %d %q", path, r.code, r.h.Get("Content-Type"))
		}
	}
	if r := p.get("/"); !strings.Contains(r.body, `<link rel="icon" href="/assets/favicon.svg"`) {
		t.Errorf("the page links no icon")
	}
}

// TestListenNeedsToken: a non-loopback address without a token is
// refused; with a token, requests without it get 401, the login page's
// cookie or a bearer header let them in.
func TestListenNeedsToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr  string
		token bool
		ok    bool
	}{
		{"127.0.0.1:7070", false, true}, {"localhost:0", false, true}, {"[::1]:7070", false, true},
		{"0.0.0.0:7070", false, false}, {":7070", false, false}, {"192.168.1.2:80", false, false}, {"example.com:80", false, false},
		{"0.0.0.0:7070", true, true}, {"nonsense", false, false},
	} {
		err := CheckListen(c.addr, c.token)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, token %v) = %v", c.addr, c.token, err)
		}
	}
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "mcp")
		w.WriteHeader(http.StatusTeapot)
	})
	p := newPanel(t, Config{Token: "s3cret-token", MCP: mcp})
	// /mcp is the MCP handler's own business: no token, no CSRF asked here.
	for _, path := range []string{"/mcp", "/mcp/sub"} {
		if r := p.do(nil, "POST", path, `{}`, nil); r.code != http.StatusTeapot || r.h.Get("X-Handler") != "mcp" {
			t.Errorf("POST %s: %d, not the MCP handler", path, r.code)
		}
	}
	if r := p.do(nil, "GET", "/mcpx", "", nil); r.code == http.StatusTeapot {
		t.Errorf("/mcpx reached the MCP handler")
	}
	seed(t, p.ws)
	if r := p.get("/api/tasks"); r.code != 401 || !strings.Contains(r.body, `"error"`) {
		t.Errorf("no token: %d %s", r.code, r.body)
	}
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Authorization": "Bearer wrong"}); r.code != 401 {
		t.Errorf("a wrong token: %d", r.code)
	}
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Authorization": "Bearer s3cret-token"}); r.code != 200 {
		t.Errorf("the bearer token: %d %s", r.code, r.body)
	}
	// Bearer requests need no CSRF token (a browser never adds the header).
	if r := p.do(nil, "POST", "/api/tasks/t1/cancel", `{"reason":"x"}`, map[string]string{"Authorization": "Bearer s3cret-token"}); r.code != 202 {
		t.Errorf("a bearer action: %d %s", r.code, r.body)
	}
	// A page without the token goes to the login page; the login sets the cookie.
	cc := *p.srv.Client()
	c := &cc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if r := p.do(c, "GET", "/", "", nil); r.code != http.StatusSeeOther || r.h.Get("Location") != "/login" {
		t.Errorf("a page without the token: %d %q", r.code, r.h.Get("Location"))
	}
	if r := p.do(c, "GET", "/login", "", nil); r.code != 200 || !strings.Contains(r.body, `name="token"`) {
		t.Errorf("the login page: %d", r.code)
	}
	r := p.do(c, "POST", "/login", "token=wrong", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if r.code != 401 || len(r.h["Set-Cookie"]) != 0 {
		t.Errorf("a wrong login: %d %v", r.code, r.h["Set-Cookie"])
	}
	r = p.do(c, "POST", "/login", "token=s3cret-token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	ck := r.h.Get("Set-Cookie")
	if r.code != http.StatusSeeOther || !strings.Contains(ck, sessionCookie+"=") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") ||
		strings.Contains(ck, "s3cret-token") {
		t.Fatalf("login: %d %q", r.code, ck)
	}
	session := strings.SplitN(ck, ";", 2)[0]
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Cookie": session}); r.code != 200 {
		t.Errorf("the login cookie: %d", r.code)
	}
	// The secret itself as a cookie is nothing.
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Cookie": "wsd_token=s3cret-token; " + sessionCookie + "=s3cret-token"}); r.code != 401 {
		t.Errorf("the secret as a cookie: %d", r.code)
	}
	// The cookie alone does not make an action: it needs the CSRF token.
	if r := p.do(nil, "POST", "/api/tasks/t1/cancel", `{}`, map[string]string{"Cookie": session}); r.code != 403 {
		t.Errorf("a cookie action without CSRF: %d %s", r.code, r.body)
	}
	// Assets are public (the login page needs its style), data is not.
	if r := p.get("/assets/app.css"); r.code != 200 {
		t.Errorf("an asset without the token: %d", r.code)
	}
}

// TestCSRF: an action needs the csrf cookie repeated in the header; the
// wrong one, or none, is 403 and writes nothing.
func TestCSRF(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	seed(t, p.ws)
	b := p.browser()
	markers := func() int {
		ents, _ := os.ReadDir(filepath.Join(p.ws.Dir(), "tasks/t1"))
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".done.") {
				n++
			}
		}
		return n
	}
	for name, hdr := range map[string]map[string]string{
		"none":         nil,
		"wrong header": {csrfHeader: strings.Repeat("a", 64)},
		"empty header": {csrfHeader: ""},
	} {
		if r := p.do(b.c, "POST", "/api/tasks/t1/cancel", `{"reason":"x"}`, hdr); r.code != 403 {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
	// Without the cookie, the header alone is not enough.
	if r := p.do(nil, "POST", "/api/tasks/t1/cancel", `{"reason":"x"}`, map[string]string{csrfHeader: b.csrf}); r.code != 403 {
		t.Errorf("header without cookie: %d", r.code)
	}
	if n := markers(); n != 0 {
		t.Fatalf("%d markers after refused actions", n)
	}
	if r := p.post(b, "/api/tasks/t1/cancel", `{"reason":"x"}`); r.code != 202 {
		t.Fatalf("with the token: %d %s", r.code, r.body)
	}
	if n := markers(); n != 1 {
		t.Errorf("%d markers after one cancel", n)
	}
	// A form post (not JSON) is refused even with the token.
	if r := p.do(b.c, "POST", "/api/tasks/t1/cancel", "reason=x", map[string]string{csrfHeader: b.csrf, "Content-Type": "application/x-www-form-urlencoded"}); r.code != 415 {
		t.Errorf("a form body: %d", r.code)
	}
	// A page of another site that rebinds its name to the loopback.
	if r := p.do(nil, "GET", "/api/tasks", "", map[string]string{"Host": "evil.example:80"}); r.code != 403 {
		t.Errorf("a foreign Host without a token: %d", r.code)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{ReadOnly: true})
	seed(t, p.ws)
	b := p.browser()
	for _, path := range []string{"/api/tasks/t1/cancel", "/api/tasks/t1/plan/review", "/api/friction/friction_001/resolve"} {
		if r := p.post(b, path, `{}`); r.code != 403 || !strings.Contains(r.body, "read-only") {
			t.Errorf("POST %s read-only: %d %s", path, r.code, r.body)
		}
	}
	if r := p.get("/"); !strings.Contains(r.body, `name="read-only" content="true"`) {
		t.Errorf("the page does not say it is read-only")
	}
}

// readState reads t's state, zero when none.
func readState(ctx context.Context, ws *files.Store, id string) workspace.State {
	st, _ := ws.ReadState(ctx, id)
	return st
}

// TestActions: each action goes through the protocol as "human", and the
// daemon applies it.
func TestActions(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	ws := p.ws
	ctx := context.Background()
	startDaemon(t, ws)
	b := p.browser()

	// A plan sent back, then approved.
	if err := fixture.PrepareTask(ctx, ws, "t1", 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan proposed", 10*time.Second, func() bool { return readState(ctx, ws, "t1").PlanStatus == "proposed" })
	if r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"maybe"}`); r.code != 400 {
		t.Errorf("a bad verdict: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"approved","extra":1}`); r.code != 400 {
		t.Errorf("an unknown field: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"approved"}{}`); r.code != 400 {
		t.Errorf("two values: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t1/plan/review", strings.Repeat(" ", maxActionBody+1)+`{}`); r.code != 400 {
		t.Errorf("a huge body: %d", r.code)
	}
	r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"revision_needed","notes":"split st_2"}`)
	var res ActionResult
	r.json(t, &res)
	if r.code != 202 || res.Review != "reviews/plan_v1_human.json" || !strings.Contains(res.Marker, ".done.human") {
		t.Fatalf("send back: %d %s", r.code, r.body)
	}
	waitFor(t, "revision_needed", 10*time.Second, func() bool { return readState(ctx, ws, "t1").PlanStatus == "revision_needed" })
	if r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"approved"}`); r.code != 409 {
		t.Errorf("no plan awaits review: %d %s", r.code, r.body)
	}
	plan, _ := json.Marshal(map[string]any{"subtasks": []map[string]any{{"id": "st_1", "description": "one"}}, "checkpoints": []map[string]any{{"id": "cp_1", "subtasks": []string{"st_1"}}}})
	if _, err := ws.WritePlan(ctx, "t1", "coordinator", plan); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan v2 proposed", 10*time.Second, func() bool { return readState(ctx, ws, "t1").PlanStatus == "proposed" })
	if r := p.post(b, "/api/tasks/t1/plan/review", `{"verdict":"approved"}`); r.code != 202 {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	waitFor(t, "executing", 10*time.Second, func() bool { return readState(ctx, ws, "t1").Status == "executing" })
	rv, err := ws.ReadTaskDoc(ctx, "t1", "reviews/plan_v2_human.json")
	if err != nil || !strings.Contains(string(rv), `"reviewer":"human"`) {
		t.Errorf("the review: %s %v", rv, err)
	}
	// The checkpoint: reached once st_1 is done, then approved from the panel.
	if r := p.post(b, "/api/tasks/t1/checkpoints/cp_1/review", `{"verdict":"approved"}`); r.code != 409 {
		t.Errorf("a checkpoint not yet reached: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t1/checkpoints/cp_9/review", `{"verdict":"approved"}`); r.code != 404 {
		t.Errorf("an unknown checkpoint: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t1/checkpoints/..%2Fx/review", `{"verdict":"approved"}`); r.code != 400 {
		t.Errorf("a bad checkpoint id: %d %s", r.code, r.body)
	}
	if _, err := ws.WriteOutput(ctx, "t1", "st_1", "w1", []byte(`{"subtask_id":"st_1","status":"completed","summary":"done"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "w1", SubtaskID: "st_1", OutputFile: "outputs/st_1.json"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "checkpoint awaiting review", 10*time.Second, func() bool {
		c := readState(ctx, ws, "t1").Checkpoints["cp_1"]
		return c != nil && c.Status == "awaiting_review"
	})
	if r := p.post(b, "/api/tasks/t1/checkpoints/cp_1/review", `{"verdict":"approved","notes":"fine"}`); r.code != 202 {
		t.Fatalf("checkpoint review: %d %s", r.code, r.body)
	}
	waitFor(t, "t1 completed", 10*time.Second, func() bool { return readState(ctx, ws, "t1").Status == "completed" })
	if r := p.post(b, "/api/tasks/t1/cancel", `{"reason":"late"}`); r.code != 409 {
		t.Errorf("cancel a completed task: %d %s", r.code, r.body)
	}

	// An escalation answered, then the task cancelled.
	if err := fixture.PrepareTask(ctx, ws, "t2", 1); err != nil {
		t.Fatal(err)
	}
	if r := p.post(b, "/api/tasks/t2/escalations/review", `{"target":"st_1","verdict":"approved"}`); r.code != 400 {
		t.Errorf("an answer without notes: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/tasks/t2/escalations/review", `{"target":"st_1","verdict":"approved","notes":"use the cache"}`); r.code != 202 {
		t.Errorf("answer: %d %s", r.code, r.body)
	}
	waitFor(t, "the answer recorded", 10*time.Second, func() bool {
		evs, _, _ := ws.ReadEvents(ctx, "t2")
		return slices.ContainsFunc(evs, func(e workspace.Event) bool {
			return e.Name == "review_recorded" && e.Attrs["reviewer"] == "human" && e.Attrs["target"] == "st_1"
		})
	})
	if r := p.post(b, "/api/tasks/t2/cancel", `{"reason":"not needed"}`); r.code != 202 {
		t.Fatalf("cancel: %d %s", r.code, r.body)
	}
	waitFor(t, "t2 cancelled", 10*time.Second, func() bool { return readState(ctx, ws, "t2").Status == "cancelled" })
	if r := p.post(b, "/api/tasks/nope/cancel", `{}`); r.code != 404 {
		t.Errorf("cancel a missing task: %d", r.code)
	}

	// Friction resolved under the log's lock.
	e, _, err := friction.Open(ws, "x").Add(ctx, friction.Entry{Type: "escalation", Description: "stuck", AffectedTasks: []string{"t2"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.post(b, "/api/friction/"+e.ID+"/resolve", `{"status":"maybe"}`); r.code != 400 {
		t.Errorf("a bad status: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/friction/friction_999/resolve", `{"status":"applied"}`); r.code != 404 {
		t.Errorf("a missing entry: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/friction/..%2Fx/resolve", `{"status":"applied"}`); r.code != 400 {
		t.Errorf("a bad entry id: %d %s", r.code, r.body)
	}
	if r := p.post(b, "/api/friction/"+e.ID+"/resolve", `{"status":"applied"}`); r.code != 200 || !strings.Contains(r.body, `"status":"applied"`) {
		t.Errorf("resolve: %d %s", r.code, r.body)
	}
	if got, _ := friction.Open(ws, "").Get(ctx, e.ID); got.Status != "applied" {
		t.Errorf("the entry is %s", got.Status)
	}
}

// TestStreamResumes: a task's stream starts after the Last-Event-ID it is
// given, sends what is appended live, once each, and says when the task
// changed.
func TestStreamResumes(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	seed(t, p.ws)
	var page EventsPage
	p.get("/api/tasks/t1/events").json(t, &page)
	if len(page.Events) < 2 {
		t.Fatalf("events: %+v", page)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := p.openStream(ctx, "/api/tasks/t1/events", map[string]string{"Last-Event-ID": page.Events[0].ID})
	next := func() sseEvent {
		t.Helper()
		for {
			select {
			case e := <-evs:
				if e.name == "ev" {
					return e
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no event within 10 s")
			}
		}
	}
	if e := next(); e.id != page.Events[1].ID {
		t.Fatalf("resumed at %s, want %s", e.id, page.Events[1].ID)
	}
	for i := 2; i < len(page.Events); i++ {
		next()
	}
	ids := map[string]bool{}
	for i := range 20 {
		if err := p.ws.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1", Attrs: map[string]string{"n": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		e := next()
		var se streamEvent
		if err := json.Unmarshal([]byte(e.data), &se); err != nil || se.Attrs["n"] != fmt.Sprint(i) || se.ID != e.id || ids[e.id] {
			t.Fatalf("live event %d: %+v (%v)", i, e, err)
		}
		ids[e.id] = true
	}
	// The all-tasks stream resumes from the events it holds.
	var all []sseEvent
	glob := p.openStream(ctx, "/api/events", nil)
	if err := p.ws.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1", Attrs: map[string]string{"n": "g"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the all-tasks stream", 10*time.Second, func() bool {
		select {
		case e := <-glob:
			all = append(all, e)
		default:
		}
		return slices.ContainsFunc(all, func(e sseEvent) bool { return e.name == "ev" && strings.Contains(e.data, `"n":"g"`) })
	})
	re := p.openStream(ctx, "/api/events", map[string]string{"Last-Event-ID": page.Events[len(page.Events)-1].ID})
	var got []string
	waitFor(t, "the resumed all-tasks stream", 10*time.Second, func() bool {
		select {
		case e := <-re:
			if e.name == "ev" {
				got = append(got, e.id)
			}
			if e.name == "reset" {
				t.Fatalf("reset instead of resuming: %s", e.data)
			}
		default:
		}
		return len(got) == 21
	})
	unknown := p.openStream(ctx, "/api/events", map[string]string{"Last-Event-ID": "t1:1"})
	if e := <-unknown; e.name != "reset" {
		t.Errorf("an id no longer held: %+v", e)
	}
}

// TestIdleStreamsDoNoWork: 100 open streams that nothing happens to wake
// nothing; one event wakes each once. The process CPU time over the idle
// second is logged.
func TestIdleStreamsDoNoWork(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{KeepAlive: time.Hour})
	seed(t, p.ws)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []<-chan sseEvent
	for i := range 100 {
		path := "/api/tasks/t1/events"
		if i%2 == 1 {
			path = "/api/events"
		}
		streams = append(streams, p.openStream(ctx, path, nil))
	}
	waitFor(t, "100 streams subscribed", 10*time.Second, func() bool { return p.s.hub.count() == 100 })
	before := p.s.wakes.Load()
	cpu0 := cpuTime()
	time.Sleep(time.Second)
	cpu := cpuTime() - cpu0
	if w := p.s.wakes.Load() - before; w != 0 {
		t.Errorf("%d wake-ups of idle streams", w)
	}
	t.Logf("100 idle streams: %v of CPU in 1 s (the whole test process)", cpu)
	if err := p.ws.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case e := <-s:
				if e.name == "ev" && strings.Contains(e.data, `"event":"probe"`) {
					break wait
				}
			case <-deadline:
				t.Fatalf("stream %d never got the event", i)
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIndexFollowsTheTree: a task created, changed and removed shows in
// the list as it happens.
func TestIndexFollowsTheTree(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	startDaemon(t, p.ws)
	if err := fixture.PrepareTask(context.Background(), p.ws, "t9", 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "t9 listed as proposed", 10*time.Second, func() bool {
		var pg TaskPage
		p.get("/api/tasks?q=t9").json(t, &pg)
		return len(pg.Tasks) == 1 && pg.Tasks[0].PlanStatus == "proposed"
	})
	if err := fixture.ApprovePlan(t.Context(), p.ws, "t9"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "t9 executing with 3 subtasks", 10*time.Second, func() bool {
		var pg TaskPage
		p.get("/api/tasks?status=executing").json(t, &pg)
		return len(pg.Tasks) == 1 && pg.Tasks[0].SubtasksTotal == 3
	})
	if err := os.RemoveAll(filepath.Join(p.ws.Dir(), "tasks/t9")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "t9 gone", 10*time.Second, func() bool {
		var pg TaskPage
		p.get("/api/tasks").json(t, &pg)
		return pg.Total == 0
	})
}

// TestStoreWithoutWatcher: a store that cannot report changes is refused
// at start, saying what it lacks; no store at all is refused too.
func TestStoreWithoutWatcher(t *testing.T) {
	t.Parallel()
	ws, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// The embedded interface hides Watch: only workspace.Store is left.
	blind := struct{ workspace.Store }{ws}
	_, err = New(Config{Store: blind})
	if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), "workspace.Watcher") {
		t.Fatalf("New over a store without Watch = %v, want ErrInvalid naming workspace.Watcher", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a store gave no error")
	}
	if _, err := New(Config{Store: ws}); err != nil {
		t.Fatalf("New over the tree: %v", err)
	}
}

// TestJournalVerdicts: the journal route gives each record the daemon's
// verdict as the state tells it: a claim that won, one that lost a race
// (with the reason the timeline's claim_refused gives), applied done
// markers.
func TestJournalVerdicts(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	ws := p.ws
	ctx := context.Background()
	startDaemon(t, ws)
	if err := fixture.PrepareTask(ctx, ws, "t1", 2); err != nil {
		t.Fatal(err)
	}
	if err := fixture.ApprovePlan(ctx, ws, "t1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan approved", 10*time.Second, func() bool { return readState(ctx, ws, "t1").PlanStatus == "approved" })
	for i, a := range []string{"w1", "w2"} {
		if _, err := ws.WriteClaim(ctx, "t1", a, "st_1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the claim of "+a+" applied", 10*time.Second, func() bool { return readState(ctx, ws, "t1").JournalSeq == int64(3+i) })
	}
	var recs []JournalView
	p.get("/api/tasks/t1/journal").json(t, &recs)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d %s %s %s: %s", r.Seq, r.Kind, r.Marker.AgentID, r.Verdict, r.Reason))
	}
	want := []string{
		"1 done coordinator applied: ",
		"2 done reviewer applied: ",
		"3 claim w1 won: ",
		"4 claim w2 lost: subtask st_1 already taken by w1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the journal says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
