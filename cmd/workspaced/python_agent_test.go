package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
)

// pythonAgent runs a Python script that imports workspace_agent from
// examples/agents/python, with the workspace root as its argument, and
// returns what it printed as JSON.
func pythonAgent(t *testing.T, w *ws, script string) map[string]any {
	t.Helper()
	py, err := clitest.Python3()
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: the Python module cannot be tried")
	}
	dir, err := filepath.Abs(filepath.Join(agentsDir, "python"))
	if err != nil {
		t.Fatal(err)
	}
	prelude := "import json, sys\nsys.path.insert(0, " + quotePy(dir) + ")\nfrom workspace_agent import *\nroot = sys.argv[1]\nout = {}\n"
	cmd := exec.Command(py, "-c", prelude+script+"\nprint(json.dumps(out))\n", w.Root)
	cmd.Env = clitest.CleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var out map[string]any
	clitest.Decode(t, string(stdout), &out)
	return out
}

func quotePy(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// field reads out[key][name] as a string ("" when absent).
func field(out map[string]any, key, name string) string {
	m, _ := out[key].(map[string]any)
	s, _ := m[name].(string)
	return s
}

// The Python module gets the same verdicts as the CLI (a claim under a
// reused marker name refused at once among them), and writes outputs
// by the same rules: nothing finished is overwritten, every replaced
// version is kept.
func TestPythonModuleVerdictsAndOutputs(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t0")
	before := w.Tree()
	out := pythonAgent(t, w, `
try:
    Workspace(root, "py_a").claim("t0", "st_1", wait=5)
    out["no_daemon"] = "claimed"
except NoDaemon as e:
    out["no_daemon"] = str(e)
`)
	if s, _ := out["no_daemon"].(string); !strings.Contains(s, "no daemon serves") || !strings.Contains(s, "nothing was dropped") {
		t.Errorf("claim with no daemon: %q", s)
	}
	clitest.SameTree(t, before, w.Tree(), "a Python claim with no daemon")

	w.serve()
	w.executingCLI("t1", `{"id":"st_1","description":"a","max_retries":1},{"id":"st_2","description":"b"}`)
	out = pythonAgent(t, w, `
a, b = Workspace(root, "py_a"), Workspace(root, "py_b")
out["won"] = a.claim("t1", "st_1", wait=30)
out["lost"] = b.claim("t1", "st_1", wait=30)
out["not_found"] = b.claim("t1", "st_9", wait=30)
# A claim under the won claim's name, as an agent that reuses names drops
# it: the daemon refuses it without a record, and the verdict says so.
import os, workspace_agent as wa
after = a.state("t1")["journal_seq"]
wa.atomic_write(os.path.join(a.task_dir("t1"), out["won"]["marker"]), wa.canonical({"agent_id": "py_a", "subtask_id": "st_2", "claimed_at": now()}))
out["reused"] = a.wait_verdict("t1", out["won"]["marker"], after, timeout=30)
try:
    a.write_output("t1", "st_1", {"subtask_id": "st_2"})
    out["contradiction"] = "written"
except Invalid as e:
    out["contradiction"] = str(e)
a.write_output("t1", "st_1", {"summary": "first try", "status": "failed", "error": "boom"})
out["failed"] = a.done("t1", "outputs/st_1.json", subtask="st_1", status="failed", error="boom", wait=30)
out["retry"] = b.claim("t1", "st_1", wait=30)
b.write_output("t1", "st_1", {"summary": "second try"})
out["refused"] = a.done("t1", "outputs/st_1.json", subtask="st_1", wait=30)
out["applied"] = b.done("t1", "outputs/st_1.json", subtask="st_1", wait=30)
try:
    b.write_output("t1", "st_1", {"summary": "overwrite"})
    out["final"] = "written"
except Conflict as e:
    out["final"] = str(e)
out["cancelled"] = a.cancel("t1", reason="enough", wait=30)
try:
    a.claim("t1", "st_2", wait=30)
    out["finished"] = "claimed"
except Conflict as e:
    out["finished"] = str(e)
`)
	for key, want := range map[string]string{"won": "won", "lost": "lost", "not_found": "not_found", "failed": "applied",
		"retry": "won", "refused": "refused", "applied": "applied", "cancelled": "applied"} {
		if got := field(out, key, "verdict"); got != want {
			t.Errorf("%s: verdict %q, want %q (%v)", key, got, want, out[key])
		}
	}
	if v, _ := out["reused"].(map[string]any); v["verdict"] != "refused" || v["journaled"] != 3.0 || v["seq"] != 0.0 || v["subtask_id"] != "st_2" ||
		v["reason"] != "this marker name was already used (journaled as seq 3); write a new marker with a fresh name" {
		t.Errorf("a claim under a reused name: %v, want refused, the name journaled as seq 3", out["reused"])
	}
	if r := field(out, "lost", "reason"); r != "subtask st_1 already taken by py_a" {
		t.Errorf("lost reason %q", r)
	}
	if r := field(out, "refused", "reason"); r != "subtask st_1 is taken by py_b, not py_a" {
		t.Errorf("refused reason %q", r)
	}
	if s := field(out, "failed", "subtask_status"); s != "pending" {
		t.Errorf("after the failure st_1 is %q, want pending", s)
	}
	if s, _ := out["contradiction"].(string); !strings.Contains(s, `subtask_id "st_2"`) || !strings.Contains(s, "'st_1'") {
		t.Errorf("contradiction: %q", s)
	}
	if s, _ := out["final"].(string); !strings.Contains(s, "subtask st_1 was completed; outputs/st_1.json is final") {
		t.Errorf("final output: %q", s)
	}
	if s, _ := out["finished"].(string); !strings.Contains(s, "task t1 is cancelled") {
		t.Errorf("claim in a finished task: %q", s)
	}
	kept, err := os.ReadFile(filepath.Join(w.Root, "tasks", "t1", "outputs", "history", "st_1.v1.json"))
	if err != nil || !strings.Contains(string(kept), `"summary": "first try"`) {
		t.Errorf("the failed try was not kept: %v %s", err, kept)
	}
	if got := w.Ok("validate"); !strings.HasPrefix(got, "ok ") {
		t.Errorf("validate: %q", got)
	}
}
