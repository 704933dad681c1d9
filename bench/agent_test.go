package bench

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMain reports the tests skipped for want of python3 or PostgreSQL,
// and stops the PostgreSQL cluster started for them.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestAgentMainReports drives an agent through pipes, as the harness
// does: its markers are dropped valid, and their stamps come when asked,
// in drop order, each taken around its drop.
func TestAgentMainReports(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, err := files.Init(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	taskDir := filepath.Join(root, "tasks", "t1")
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := AgentMain(root, "t1", "agent_1", inR, outW)
		outW.Close()
		inR.Close()
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("agent said nothing more (%v)", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	before := time.Now()
	io.WriteString(inW, "now st_1\nst_2\nst_3\nsync\n")
	if l := next(); l != "prepared" {
		t.Fatalf("after sync: %q, want prepared (no stamp before report)", l)
	}
	io.WriteString(inW, "go\nreport\n")
	var last time.Time
	for _, want := range []string{"st_1", "st_2", "st_3"} {
		sub, ns, _ := strings.Cut(next(), " ")
		v, err := strconv.ParseInt(ns, 10, 64)
		if sub != want || err != nil {
			t.Fatalf("stamp %q %q, want %s and a number", sub, ns, want)
		}
		at := time.Unix(0, v)
		if at.Before(before) || at.After(time.Now()) || at.Before(last) {
			t.Errorf("%s stamped %v: not within the drops (after %v, %v)", sub, at, before, last)
		}
		last = at
		b, err := os.ReadFile(filepath.Join(taskDir, workspace.DonePrefix+"agent_1."+sub))
		if err != nil {
			t.Fatalf("marker of %s: %v", sub, err)
		}
		var m workspace.Marker
		if err := json.Unmarshal(b, &m); err != nil || m.AgentID != "agent_1" || m.SubtaskID != sub {
			t.Errorf("marker of %s = %s (%v)", sub, b, err)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(taskDir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestAgentExitAbortsWait: an agent process that exits early makes the
// harness's wait fail at once, naming it, not at its deadline.
func TestAgentExitAbortsWait(t *testing.T) {
	t.Parallel()
	cm := newCommits()
	a, err := startAgent([]string{"sh", "-c", "echo ready"}, cm, "agent_7")
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	errc := make(chan error, 1)
	go func() { errc <- cm.wait([]string{"t1/st_1"}, time.Now().Add(time.Hour)) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "agent_7 exited early") {
			t.Errorf("wait: %v, want the agent named as exited early", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("wait still blocked a minute after the agent exited")
	}
	// An agent closed by the harness does not abort the waits that
	// follow (this one stays until its input ends).
	cm2 := newCommits()
	b, err := startAgent([]string{"sh", "-c", "echo ready; cat >/dev/null"}, cm2, "agent_8")
	if err != nil {
		t.Fatal(err)
	}
	b.close()
	cm2.observe("t1", taskView{Status: "executing"}, time.Now())
	if err := cm2.waitState("t1", "executing", func(v taskView) bool { return v.Status == "executing" }, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("wait after a clean close: %v", err)
	}
	// One that never says ready is refused, naming what it said.
	if _, err := startAgent([]string{"sh", "-c", "echo hello"}, newCommits(), "agent_9"); err == nil || !strings.Contains(err.Error(), `"hello"`) {
		t.Errorf("start of an agent saying hello: %v, want refused naming what it said", err)
	}
}

// TestStartAgentsAtOnce: the harness starts a row's agents all at once
// and then waits for each to be ready. Each agent here says ready only
// once all three have started, which agents started one after another,
// each awaited, never do: the first gives up and says so.
func TestStartAgentsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// $1 the directory, $2 the agent's name; half a minute of patience
	// or more.
	const script = `touch "$1/$2"; dir=$1; i=0
while set -- "$dir"/agent_*; [ $# -lt 3 ]; do
	i=$((i+1)); if [ $i -gt 300 ]; then echo "alone"; exit 0; fi; sleep 0.1
done
echo ready; cat >/dev/null`
	kind := agentKind{argv: func(_, _, name string) []string { return []string{"sh", "-c", script, "sh", dir, name} }}
	r := &rig{dir: dir, cm: newCommits()}
	as, err := r.startAgents(kind, "t1", 3)
	if err != nil {
		t.Fatalf("start 3 agents that wait for each other: %v", err)
	}
	closeAll(as)
	// One that fails to start is named, and the others are closed.
	bad := agentKind{argv: func(_, _, name string) []string {
		if name == "agent_2" {
			return []string{"sh", "-c", "echo hello"}
		}
		return []string{"sh", "-c", "echo ready; cat >/dev/null"}
	}}
	if _, err := r.startAgents(bad, "t1", 3); err == nil || !strings.Contains(err.Error(), `agent_2 did not start (said "hello")`) {
		t.Errorf("start with agent_2 saying hello: %v, want it named", err)
	}
}

// TestPythonAgentDropsMarkers drives the Python agent driver through the
// protocol: it drops markers the daemon accepts (valid JSON naming agent,
// subtask and output) through the example module, and stamps their
// renames within the drops.
func TestPythonAgentDropsMarkers(t *testing.T) {
	t.Parallel()
	python := findPython()
	if python == "" {
		optdep.Skip(t, "python3", "python3 is not on PATH: the Python agent cannot run")
	}
	root := t.TempDir()
	ws, err := files.Init(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "python agent"}); err != nil {
		t.Fatal(err)
	}
	driver, err := writePythonAgent(filepath.Join(t.TempDir(), "py"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := startAgent(pythonAgents(python, driver).argv(root, "t1", "py_1"), newCommits(), "py_1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	before := time.Now()
	io.WriteString(a.in, "now st_1\nst_2\nst_3\nsync\n")
	if l := <-a.lines; l != "prepared" {
		t.Fatalf("after sync: %q, want prepared", l)
	}
	io.WriteString(a.in, "go\n")
	subs, ts, err := a.report(3)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	for i, want := range []string{"st_1", "st_2", "st_3"} {
		if subs[i] != want || ts[i].Before(before) || ts[i].After(after) || (i > 0 && ts[i].Before(ts[i-1])) {
			t.Errorf("stamp %d: %s at %v, want %s within the drops (%v … %v)", i, subs[i], ts[i], want, before, after)
		}
	}
	names, _ := filepath.Glob(filepath.Join(root, "tasks", "t1", workspace.DonePrefix+"py_1.*"))
	got := map[string]bool{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var m workspace.Marker
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("marker %s: %v", name, err)
		}
		if m.AgentID != "py_1" || m.Status != "completed" || m.OutputFile != "outputs/"+m.SubtaskID+".json" || m.CompletedAt == nil {
			t.Errorf("marker %s = %s", filepath.Base(name), b)
		}
		got[m.SubtaskID] = true
	}
	if len(names) != 3 || !got["st_1"] || !got["st_2"] || !got["st_3"] {
		t.Errorf("markers %v for subtasks %v, want one each for st_1 … st_3", names, got)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "tasks", "t1", ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
