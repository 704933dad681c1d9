package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// arcWS builds the ARC walkthrough with the CLI: a human asks
// the coordinator, the coordinator delegates to the solver, the solver
// stores the grid as env data and delegates to the observer.
func arcWS(t *testing.T) *ws {
	t.Helper()
	w := newWS(t)
	cards := `{"agents": [
  {"name": "coordinator", "description": "Orchestrates ARC-AGI solving by delegating to specialist agents"},
  {"name": "solver", "description": "Solves ARC-AGI puzzles by analyzing input/output grid pairs and finding transformation rules", "capabilities": ["load_arc_task"]},
  {"name": "observer", "description": "Notices patterns in grids", "preamble_detail": "minimal"},
  {"name": "tool", "delegation_context": false}
]}
`
	if err := os.WriteFile(filepath.Join(w.Root, "config", "agents.json"), []byte(cards), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Ok("task", "create", "--id", "training-001", "--description", "Solve ARC task training-001")
	w.Ok("thread", "new", "--task", "training-001", "--id", "th_solver", "--from", "coordinator", "--to", "solver",
		"--message", "Please solve ARC task training-001.")
	w.Ok("env", "store", "--task", "training-001", "--agent", "solver", "--key", "arc_task",
		"--description", "The current ARC-AGI puzzle: task training-001, a 3x3 grid.", "--value", `{"input_grid":[[0,1],[2,3]]}`)
	w.Ok("thread", "new", "--task", "training-001", "--id", "th_observer", "--parent", "th_solver", "--from", "solver", "--to", "observer",
		"--message", "What patterns do you notice in the current task?", "--buffers", "env:arc_task,notes.md")
	w.Ok("thread", "new", "--task", "training-001", "--id", "th_tool", "--parent", "th_solver", "--from", "solver", "--to", "tool",
		"--message", "Rotate it.")
	return w
}

func TestPreambleCLI(t *testing.T) {
	t.Parallel()
	w := arcWS(t)
	before := w.Tree()

	got := w.Ok("preamble", "--thread", "th_solver")
	want := "---\n[Delegation Context]\nCalled by: coordinator\n" +
		"coordinator is: \"Orchestrates ARC-AGI solving by delegating to specialist agents\"\n" +
		"Delegation chain: human → coordinator → you (solver)\n" +
		"Task context: The human asked: \"Solve ARC task training-001\"\n" +
		"Shared environment data is available — run `workspaced env list --task training-001` to see what has been stored.\n---\n"
	if got != want {
		t.Errorf("preamble of th_solver:\n%s\nwant:\n%s", got, want)
	}
	// The observer's card asks for minimal; --detail overrides it.
	if got := w.Ok("preamble", "--thread", "th_observer"); strings.Contains(got, "solver is:") || !strings.Contains(got, "human → coordinator → solver → you (observer)") {
		t.Errorf("card detail minimal not honoured:\n%s", got)
	}
	if got := w.Ok("preamble", "--thread", "th_observer", "--task", "training-001", "--detail", "verbose"); !strings.Contains(got, `solver was asked by coordinator: "Please solve ARC task training-001."`) ||
		!strings.Contains(got, "solver's capabilities: load_arc_task") {
		t.Errorf("verbose preamble:\n%s", got)
	}
	for _, thread := range []string{"training-001", "th_tool"} {
		if got := w.Ok("preamble", "--thread", thread); got != "" {
			t.Errorf("preamble of %s should be empty, got:\n%s", thread, got)
		}
	}
	var p struct {
		Empty  bool   `json:"empty"`
		Reason string `json:"reason"`
		Text   string `json:"text"`
	}
	clitest.Decode(t, w.Ok("preamble", "--thread", "th_tool", "--json"), &p)
	if !p.Empty || !strings.Contains(p.Reason, "delegation_context") || p.Text != "" {
		t.Errorf("--json of an opted-out thread: %+v", p)
	}
	clitest.Decode(t, w.Ok("preamble", "--thread", "th_solver", "--json"), &p)
	if p.Empty || p.Text != want {
		t.Errorf("--json text differs from the plain output: %+v", p)
	}
	clitest.SameTree(t, before, w.Tree(), "preamble")

	w.Fails(exitNotFound, "th_nowhere", "preamble", "--thread", "th_nowhere")
	w.Fails(exitUsage, "missing --thread", "preamble")
	w.Fails(exitUsage, "--detail", "preamble", "--thread", "th_solver", "--detail", "loud")
	if r := w.Run("preamble", "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "Exit codes:") || !strings.Contains(r.Stdout, "verbose") {
		t.Errorf("--help: %v", r)
	}
}

func TestPreambleCLIBrokenChain(t *testing.T) {
	t.Parallel()
	w := arcWS(t)
	loop := `{"id": "th_loop", "parent_id": "th_loop", "task_id": "training-001", "from": "solver", "to": "observer", "created_at": "2024-01-15T10:00:00Z", "status": "active"}` + "\n"
	if err := os.WriteFile(filepath.Join(w.Root, "tasks", "training-001", "threads", "th_loop.json"), []byte(loop), 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.Run("preamble", "--thread", "th_loop")
	if r.Code == 0 || !strings.Contains(r.Stderr, "th_loop") || !strings.Contains(r.Stderr, "cycle") || r.Stdout != "" {
		t.Errorf("cycle: %v", r)
	}
	r = w.Run("context", "--thread", "th_loop")
	if r.Code == 0 || !strings.Contains(r.Stderr, "th_loop") || r.Stdout != "" {
		t.Errorf("cycle in context: %v", r)
	}
}

func TestSystemContextCLI(t *testing.T) {
	t.Parallel()
	w := arcWS(t)
	got := w.Ok("system-context", "--agent", "solver", "--task", "training-001")
	for _, s := range []string{`You are an agent named "solver"`, `Description: "Solves ARC-AGI puzzles`, "Declared capabilities: load_arc_task",
		"  - `workspaced env store --task training-001 --key K --value JSON`: ", "  - `workspaced system-context --agent solver`: ",
		"Task training-001 has 1 environment data entry — run `workspaced env list --task training-001` to see it."} {
		if !strings.Contains(got, s) {
			t.Errorf("system-context lacks %q:\n%s", s, got)
		}
	}
	if got := w.Ok("system-context", "--agent", "stranger"); !strings.Contains(got, "Description: (no agent card)") || strings.Contains(got, "### Environment data") {
		t.Errorf("agent without a card:\n%s", got)
	}
	if got := w.Ok("system-context", "--agent", "solver", "--for", "mcp"); !strings.Contains(got, "  - store_env_data: ") || !strings.Contains(got, "You can use list_capabilities") {
		t.Errorf("--for mcp:\n%s", got)
	}
	var out struct {
		Text         string `json:"text"`
		For          string `json:"for"`
		Capabilities []struct {
			Name, Call, Description string
		} `json:"universal_capabilities"`
	}
	clitest.Decode(t, w.Ok("system-context", "--agent", "solver", "--json"), &out)
	if len(out.Capabilities) < 10 || out.For != "cli" || out.Capabilities[0].Name != "store_env_data" ||
		out.Capabilities[0].Call != "workspaced env store --task T --key K --value JSON" || !strings.HasPrefix(out.Text, "## System Context\n") {
		t.Errorf("--json: %+v", out)
	}
	w.Fails(exitUsage, "missing --agent", "system-context")
	w.Fails(exitUsage, `--for "python"`, "system-context", "--agent", "solver", "--for", "python")
	w.Fails(exitNotFound, "no-such-task", "system-context", "--agent", "solver", "--task", "no-such-task")
}

func TestContextCLI(t *testing.T) {
	t.Parallel()
	w := arcWS(t)
	if err := os.WriteFile(filepath.Join(w.Root, "tasks", "training-001", "notes.md"), []byte("corners swap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := w.Tree()
	got := w.Ok("context", "--thread", "th_observer")
	for _, s := range []string{"# Context of thread th_observer (agent observer, task training-001)", "Budget: 8,000 tokens",
		"### env:arc_task", `{"input_grid":[[0,1],[2,3]]}`, "### notes.md", "corners swap",
		"## Open threads (dehydrated)", "### thread:th_solver", "## Env manifest", "- arc_task (v1, "} {
		if !strings.Contains(got, s) {
			t.Errorf("context lacks %q:\n%s", s, got)
		}
	}
	if again := w.Ok("context", "--thread", "th_observer"); again != got {
		t.Errorf("second run differs:\n%s\n---\n%s", again, got)
	}
	zero := w.Ok("context", "--thread", "th_observer", "--budget", "0")
	if !strings.Contains(zero, "## Left out") || strings.Contains(zero, "### env:arc_task") {
		t.Errorf("budget 0:\n%s", zero)
	}
	var b struct {
		Budget   int `json:"budget"`
		Used     int `json:"used"`
		Sections []struct {
			Name  string `json:"name"`
			Items []struct {
				Ref    string `json:"ref"`
				Tokens int    `json:"tokens"`
			} `json:"items"`
		} `json:"sections"`
		Omitted []struct{ Item, Reason string } `json:"omitted"`
		Text    string                          `json:"text"`
	}
	clitest.Decode(t, w.Ok("context", "--thread", "th_observer", "--budget", "60", "--json"), &b)
	if b.Budget != 60 || b.Used > 60 || len(b.Sections) != 5 || len(b.Omitted) == 0 || !strings.HasPrefix(b.Omitted[0].Reason, "over budget") {
		t.Errorf("--budget 60 --json: %+v", b)
	}
	clitest.SameTree(t, before, w.Tree(), "context")

	w.Ok("thread", "update", "--thread", "th_observer", "--buffers", "env:missing,../training-001/task.json,/etc/passwd")
	got = w.Ok("context", "--thread", "th_observer")
	for _, s := range []string{"- env:missing: not found", "- ../training-001/task.json: refused", "- /etc/passwd: refused: an absolute path"} {
		if !strings.Contains(got, s) {
			t.Errorf("context lacks %q:\n%s", s, got)
		}
	}
	w.Fails(exitUsage, "--budget", "context", "--thread", "th_observer", "--budget", "-5")
	w.Fails(exitUsage, "missing --thread", "context")
	w.Fails(exitNotFound, "th_nowhere", "context", "--thread", "th_nowhere")
}
