package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// TestPostgresCommands runs the everyday commands on a postgres:// root,
// as processes, with the PostgreSQL daemon serving: the same command
// lines as on a directory, only --root changes (here through
// WORKSPACE_ROOT).
func TestPostgresCommands(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	p.serve()
	w := &ws{clitest.At(t, p.Root)}
	must := w.OkIn
	must("", "task", "create", "--id", "t1", "--description", "build the thing", "--submitted-by", "human")
	plan := `{"summary":"two steps","subtasks":[{"id":"s1","description":"one","estimated_complexity":"low"},{"id":"s2","description":"two","estimated_complexity":"low"}]}`
	must(plan, "plan", "write", "--task", "t1", "--agent", "planner", "--file", "-", "--propose")
	waitState(t, w, "t1", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	must(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "plan_v1",
		"--agent", "reviewer", "--file", "-", "--done")
	waitState(t, w, "t1", func(st workspace.State) bool { return st.Status == "executing" })

	must("", "env", "store", "--task", "t1", "--key", "'); DROP TABLE entries; --", "--description", "a key that is SQL", "--value", `{"n":1}`, "--agent", "w1")
	if r := must("", "env", "get", "--task", "t1", "--key", "'); DROP TABLE entries; --"); !strings.Contains(r.Stdout, `"n": 1`) {
		t.Errorf("env get: %s", r.Stdout)
	}
	if r := must("", "env", "list", "--task", "t1"); !strings.Contains(r.Stdout, "a key that is SQL") {
		t.Errorf("env list: %s", r.Stdout)
	}

	// --wait reads the daemon's verdict: s2 is won once, then lost.
	if r := w.Run("claim", "--task", "t1", "--subtask", "s2", "--agent", "w2", "--wait", "30s"); r.Code != 0 || !strings.Contains(r.Stdout, "won") {
		t.Errorf("claim --wait of a pending subtask: want exit 0, won: %v", r)
	}
	if r := w.Run("claim", "--task", "t1", "--subtask", "s2", "--agent", "w3", "--wait", "30s", "--json"); r.Code != exitConflict || !strings.Contains(r.Stdout, `"lost"`) {
		t.Errorf("claim --wait of a subtask taken: want exit %d, lost: %v", exitConflict, r)
	}

	must("", "claim", "--task", "t1", "--subtask", "s1", "--agent", "w1")
	waitState(t, w, "t1", func(st workspace.State) bool {
		return st.Subtasks["s1"] != nil && st.Subtasks["s1"].Status == "in_progress"
	})
	must(`{"summary":"done one"}`, "output", "write", "--task", "t1", "--subtask", "s1", "--agent", "w1", "--file", "-", "--done")
	st := waitState(t, w, "t1", func(st workspace.State) bool { return st.Subtasks["s1"].Status == "completed" })
	if st.Subtasks["s1"].Worker != "w1" {
		t.Errorf("s1 worker %q, want w1", st.Subtasks["s1"].Worker)
	}
	if r := must("", "task", "show", "--task", "t1"); !strings.Contains(r.Stdout, "1 completed") {
		t.Errorf("task show: %s", r.Stdout)
	}
	r := must("", "events", "--task", "t1")
	for _, want := range []string{"task_created", "plan_approved", "env_stored", "work_completed"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("events lack %s:\n%s", want, r.Stdout)
		}
	}

	// Once the daemon has applied the markers, the journal folds to the
	// state it wrote, and status names the daemon serving with nothing
	// waiting.
	if r := must("", "state", "rebuild", "--task", "t1"); !strings.Contains(r.Stdout, "matches the journal") {
		t.Errorf("state rebuild: %s", r.Stdout)
	}
	if r := w.Run("state", "rebuild", "--task", "nope"); r.Code != exitNotFound {
		t.Errorf("state rebuild of no task: exit %d, want %d: %v", r.Code, exitNotFound, r)
	}
	u, _ := url.Parse(p.Root)
	pass, _ := u.User.Password()
	if r := must("", "status"); !strings.Contains(r.Stdout, "daemon: serving") || !strings.Contains(r.Stdout, "markers waiting: 0") ||
		!strings.Contains(r.Stdout, "t1") || (pass != "" && strings.Contains(r.Stdout, pass)) {
		t.Errorf("status: %s", r.Stdout)
	}
	var s struct {
		Serving        bool           `json:"serving"`
		Holder         string         `json:"holder"`
		Epoch          int64          `json:"epoch"`
		ByStatus       map[string]int `json:"by_status"`
		MarkersWaiting int            `json:"markers_waiting"`
		Tasks          []struct {
			ID         string `json:"id"`
			Status     string `json:"status"`
			JournalSeq int64  `json:"journal_seq"`
		} `json:"tasks"`
	}
	if r := must("", "status", "--json"); json.Unmarshal([]byte(r.Stdout), &s) != nil || !s.Serving || s.Holder == "" || s.Epoch < 1 ||
		s.MarkersWaiting != 0 || s.ByStatus["executing"] != 1 || len(s.Tasks) != 1 || s.Tasks[0].ID != "t1" || s.Tasks[0].JournalSeq != st.JournalSeq {
		t.Errorf("status --json: %+v\n%s", s, r.Stdout)
	}

	// A state row that is not the fold of its journal is told apart.
	if _, err := p.s.Pool().Exec(context.Background(), `UPDATE states SET doc = replace(doc, '"w1"', '"someone"') WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if r := w.Run("state", "rebuild", "--task", "t1"); r.Code != exitFailure || !strings.Contains(r.Stdout, "--- state of task t1") ||
		!strings.Contains(r.Stdout, "\n-") || !strings.Contains(r.Stdout, "\n+") || !strings.Contains(r.Stdout, `someone`) {
		t.Errorf("state rebuild of a tampered state: want exit 1 and a diff: %v", r)
	}

	// validate judges the database as the tree it would export, and names
	// a broken document by its place in that tree.
	if r := must("", "validate"); !strings.HasPrefix(r.Stdout, "ok ") {
		t.Errorf("validate: %v", r)
	}
	ctx := context.Background()
	var body string
	if err := p.s.Pool().QueryRow(ctx, `SELECT body FROM products WHERE task_id = 't1' AND path = 'outputs/s1.json'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.Pool().Exec(ctx, `UPDATE products SET body = '{"summary": 7}' WHERE task_id = 't1' AND path = 'outputs/s1.json'`); err != nil {
		t.Fatal(err)
	}
	if r := w.Run("validate"); r.Code == 0 || !strings.Contains(r.Stdout, "tasks/t1/outputs/s1.json") || strings.Contains(r.Stdout, "workspaced-validate-") {
		t.Errorf("validate of a broken output: want a failure naming tasks/t1/outputs/s1.json: %v", r)
	}
	if _, err := p.s.Pool().Exec(ctx, `UPDATE products SET body = $1 WHERE task_id = 't1' AND path = 'outputs/s1.json'`, body); err != nil {
		t.Fatal(err)
	}

	// lock -- CMD holds an advisory lock while CMD runs: CMD's own exit
	// status comes back, and a second taker (here CMD itself, on its own
	// connection) waits, then gives up naming the lock.
	if r := w.Run("lock", "--task", "t1", "--name", "n", "--", "true"); r.Code != 0 {
		t.Errorf("lock -- true: %v", r)
	}
	if r := w.Run("lock", "--task", "t1", "--name", "n", "--", "false"); r.Code != 1 {
		t.Errorf("lock -- false: want CMD's exit 1: %v", r)
	}
	if r := w.Run("lock", "--task", "t1", "--name", "n", "--", clitest.Bin(), "lock", "--task", "t1", "--name", "n", "--timeout", "300ms", "--", "true"); r.Code != exitConflict ||
		!strings.Contains(r.Stderr, "lock") {
		t.Errorf("lock taken twice: want the inner taker to give up with exit %d: %v", exitConflict, r)
	}

	// The locks and retention of PostgreSQL answer as on files.
	if r := must("", "locks"); r.Stderr != "" {
		t.Errorf("locks: %v", r)
	}
	if r := must("", "cleanup", "--dry-run"); r.Stderr != "" {
		t.Errorf("cleanup --dry-run: %v", r)
	}
}

// waitState polls `state show --json` until ok holds.
func waitState(t *testing.T, w *ws, task string, ok func(workspace.State) bool) workspace.State {
	t.Helper()
	var st workspace.State
	poll.Until(t, 20*time.Second, "the state of "+task+" through state show", func() (bool, string) {
		r := w.Run("state", "show", "--task", task, "--json")
		st = workspace.State{}
		return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &st) == nil && ok(st), r.String()
	})
	return st
}

// TestPostgresWeb serves the panel over a postgres:// root, as a process
// beside the PostgreSQL daemon: its JSON answers, and a marker the daemon
// applies reaches an open event stream of the task.
func TestPostgresWeb(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	p.serve()
	w := &ws{clitest.At(t, p.Root)}
	must := func(stdin string, args ...string) {
		t.Helper()
		if r := w.RunIn(stdin, args...); r.Code != 0 {
			t.Fatalf("%v: %v", args, r)
		}
	}
	must("", "task", "create", "--id", "t1", "--description", "served from the database", "--submitted-by", "human")
	plan := `{"summary":"one step","subtasks":[{"id":"s1","description":"one","estimated_complexity":"low"}]}`
	must(plan, "plan", "write", "--task", "t1", "--agent", "planner", "--file", "-", "--propose")
	must(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "plan_v1",
		"--agent", "reviewer", "--file", "-", "--done")
	waitState(t, w, "t1", func(st workspace.State) bool { return st.Status == "executing" })

	web := w.web()
	get := func(path string) string {
		t.Helper()
		res, err := http.Get(web.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !json.Valid(body) {
			t.Fatalf("GET %s: %d, not JSON:\n%s\nstderr:\n%s", path, res.StatusCode, body, web.stderr)
		}
		return string(body)
	}
	if b := get("/api/tasks"); !strings.Contains(b, `"t1"`) || !strings.Contains(b, "served from the database") {
		t.Errorf("/api/tasks lacks t1:\n%s", b)
	}
	if b := get("/api/tasks/t1"); !strings.Contains(b, `"s1"`) || !strings.Contains(b, "executing") {
		t.Errorf("/api/tasks/t1 lacks its plan and state:\n%s", b)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", web.url+"/api/tasks/t1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	data := make(chan string, 1024)
	go func() {
		defer close(data)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data <- line
			}
		}
	}()
	must("", "claim", "--task", "t1", "--subtask", "s1", "--agent", "w-live")
	deadline := time.After(30 * time.Second)
	for {
		select {
		case d, ok := <-data:
			if !ok {
				t.Fatalf("the event stream ended before the claim arrived; stderr:\n%s", web.stderr)
			}
			if strings.Contains(d, "w-live") {
				return
			}
		case <-deadline:
			t.Fatalf("the daemon's claim of s1 by w-live did not reach the event stream within 30s; stderr:\n%s", web.stderr)
		}
	}
}

// TestPostgresDaemonFriction: the PostgreSQL daemon runs the friction
// detectors on what it commits, and `friction list` on the postgres://
// root shows what it found, as on files.
func TestPostgresDaemonFriction(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	p.serve()
	w := &ws{clitest.At(t, p.Root)}
	must := w.OkIn
	must("", "task", "create", "--id", "t1", "--description", "sent back twice", "--submitted-by", "human")
	plan := `{"summary":"two steps","subtasks":[{"id":"s1","description":"one"},{"id":"s2","description":"two"}]}`
	for i := 1; i <= 2; i++ {
		must(plan, "plan", "write", "--task", "t1", "--agent", "planner", "--file", "-", "--propose")
		waitState(t, w, "t1", func(st workspace.State) bool { return st.PlanStatus == "proposed" && st.PlanVersion == i })
		must(`{"type":"plan_review","verdict":"revision_needed","issues":[{"problem":"missing tests"}]}`, "review", "write", "--task", "t1",
			"--id", "plan_v"+strconv.Itoa(i), "--agent", "reviewer", "--file", "-", "--done")
		waitState(t, w, "t1", func(st workspace.State) bool { return st.RevisionCount == i })
	}
	poll.Until(t, 20*time.Second, "the daemon's repeated_revision in friction list", func() (bool, string) {
		r := must("", "friction", "list", "--json")
		return strings.Contains(r.Stdout, `"repeated_revision"`) && strings.Contains(r.Stdout, `"t1"`), r.String()
	})
	if r := must("", "events", "--task", "t1"); !strings.Contains(r.Stdout, "friction_recorded t1 friction_001") {
		t.Errorf("events of t1: no friction_recorded: %s", r.Stdout)
	}
}

// TestPostgresPrintsNoPassword: on a postgres:// root with a password, the
// commands that report a marker or a product (claim, done, output write,
// plan write, review write; text, --json, --wait) print the protocol's
// name of the thing — the task and the marker — never a path joined onto
// the URL, and never the password.
func TestPostgresPrintsNoPassword(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	u, _ := url.Parse(p.Root)
	const secret = "sekrit-pw-9f3"
	if pass, ok := u.User.Password(); ok {
		t.Skipf("the test server's URL has a password of its own (%d bytes): cannot set one", len(pass))
	}
	// The throwaway cluster trusts local connections: the password is
	// carried, not checked.
	u.User = url.UserPassword(u.User.Username(), secret)
	p.serve()
	w := &ws{clitest.At(t, u.String())}
	var outs []clitest.Result
	step := func(stdin string, args ...string) clitest.Result {
		t.Helper()
		r := w.OkIn(stdin, args...)
		outs = append(outs, r)
		return r
	}
	step("", "task", "create", "--id", "t1", "--description", "d")
	r := step(clitest.PlanJSON(2, false), "plan", "write", "--task", "t1", "--agent", "planner", "--file", "-", "--propose", "--json")
	var pw struct{ Path, Marker string }
	clitest.Decode(t, r.Stdout, &pw)
	if pw.Path != "tasks/t1/plan.json" || !strings.HasPrefix(pw.Marker, "tasks/t1/.done.planner") {
		t.Errorf("plan write --json: want the protocol's names, got %+v", pw)
	}
	waitState(t, w, "t1", func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	step(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	waitState(t, w, "t1", func(st workspace.State) bool { return st.Status == "executing" })
	if r := step("", "claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1"); !strings.HasPrefix(r.Stdout, "tasks/t1/.claim.w1") {
		t.Errorf("claim: want the marker's name, got %q", r.Stdout)
	}
	step("", "claim", "--task", "t1", "--subtask", "st_2", "--agent", "w2", "--wait", "30s", "--json")
	step("", "claim", "--task", "t1", "--subtask", "st_2", "--agent", "w2", "--json")
	step(`{"summary":"s"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-")
	step("", "done", "--task", "t1", "--agent", "w1", "--output", "outputs/st_1.json", "--wait", "30s")
	step(`{"summary":"s"}`, "output", "write", "--task", "t1", "--subtask", "st_2", "--agent", "w2", "--file", "-", "--done", "--json")
	step(`{"type":"checkpoint_review","verdict":"approved","target":"cp"}`, "review", "write", "--task", "t1", "--id", "r2", "--agent", "rev", "--file", "-", "--json")
	for _, r := range outs {
		for _, bad := range []string{secret, "postgres:/", "postgresql:/"} {
			if strings.Contains(r.Stdout+r.Stderr, bad) {
				t.Errorf("%q printed:\n%s%s", bad, r.Stdout, r.Stderr)
			}
		}
	}
	// An error names no password either.
	if r := w.Run("output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-"); r.Code == 0 || strings.Contains(r.Stderr, secret) || strings.Contains(r.Stderr, "postgres:/") {
		t.Errorf("an error on the database root: %v", r)
	}
}
