package ops

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// The -update flag may be defined by another test file of this package;
// define it only when nobody has (package variables run before init).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func goldenUpdate() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	v, _ := f.Value.(flag.Getter).Get().(bool)
	return v
}

// checkGolden compares got with testdata/<name>, rewriting it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", filepath.FromSlash(name))
	if goldenUpdate() {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden %s: %v (run with -update to create it)", file, err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", file, got, want)
	}
}

// checkGoldenJSON compares v, encoded, with a golden JSON file structurally.
func checkGoldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join("testdata", filepath.FromSlash(name))
	if goldenUpdate() {
		checkGolden(t, name, got)
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden %s: %v (run with -update to create it)", file, err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden %s: %v", file, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", file, got, want)
	}
}

var fixtureNow = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

func boolPtr(b bool) *bool { return &b }

// provFixture builds the ARC walkthrough (a solver sharing a puzzle with an
// observer through env data) and a few odd trees
// around it:
//
//	training-001: human → coordinator → solver → observer (env data arc_task)
//	              + solver → tool (delegation_context false), solver → terse (preamble_detail minimal),
//	              human → solver directly, a done and a pending thread
//	training-002: human → coordinator → solver, no env data
//	deep:         human → lvl1 → … → lvl7 (six delegations), a long multi-byte root message
//	nocard:       human → coordinator → ghost → observer (ghost has no card)
func provFixture(t testing.TB) *files.Store {
	t.Helper()
	w, _ := provFixtureClock(t)
	return w
}

// provFixtureClock is provFixture with its clock, which stays at
// fixtureNow until the test moves it.
func provFixtureClock(t testing.TB) (*files.Store, *clock) {
	t.Helper()
	ctx := context.Background()
	c := &clock{t: fixtureNow}
	w, err := files.Init(t.TempDir(), workspace.Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	cards := workspace.AgentCards{Agents: []workspace.AgentCard{
		{Name: "coordinator", Description: "Orchestrates ARC-AGI solving by delegating to specialist agents", Role: "coordinator", Capabilities: []string{"delegate"}},
		{Name: "solver", Description: "Solves ARC-AGI puzzles by analyzing input/output grid pairs and finding transformation rules", Role: "worker", Capabilities: []string{"load_arc_task", "read_file"}},
		{Name: "observer", Description: "Notices spatial and colour patterns in grids", Role: "worker", Capabilities: []string{"read_file", "list_files"},
			GlobalBuffers: []string{"memory:global:house_style", "env:arc_task"}},
		{Name: "tool", Description: "A pure function over grids", DelegationContext: boolPtr(false)},
		{Name: "terse", Description: "Answers in one word", PreambleDetail: DetailMinimal},
	}}
	for i := 1; i <= 7; i++ {
		cards.Agents = append(cards.Agents, workspace.AgentCard{Name: fmt.Sprintf("lvl%d", i), Description: fmt.Sprintf("Level %d of a deep delegation", i)})
	}
	if err := w.WriteJSON(workspace.AgentsFile, cards); err != nil {
		t.Fatal(err)
	}
	mustTask := func(id, desc string) {
		t.Helper()
		if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: desc, To: map[bool]string{true: "lvl1", false: "coordinator"}[id == "deep"]}); err != nil {
			t.Fatal(err)
		}
	}
	mustThread := func(req workspace.NewThreadRequest) {
		t.Helper()
		if _, err := w.NewThread(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	mustTask("training-001", "Solve ARC task training-001")
	mustThread(workspace.NewThreadRequest{TaskID: "training-001", ID: "th_solver", From: "coordinator", To: "solver",
		Message: "Please solve ARC task training-001. Load the task, analyze it, and find the transformation rule.",
		Concern: "Find the transformation rule of training-001", Approach: "Load the grid, consult the observer", Buffers: []string{"env:arc_task"}})
	mustThread(workspace.NewThreadRequest{TaskID: "training-001", ID: "th_observer", ParentID: "th_solver", From: "solver", To: "observer",
		Message: "What patterns do you notice in the current task?\nFocus on spatial relationships and color transformations.",
		Concern: "Spot the patterns in the arc_task grid", Approach: "Compare input and output cell by cell",
		Buffers: []string{"env:arc_task", "notes/observations.md", "memory:session:scratch"}, SkillTags: []string{"grids"}})
	mustThread(workspace.NewThreadRequest{TaskID: "training-001", ID: "th_tool", ParentID: "th_solver", From: "solver", To: "tool", Message: "Rotate the grid"})
	mustThread(workspace.NewThreadRequest{TaskID: "training-001", ID: "th_terse", ParentID: "th_solver", From: "solver", To: "terse", Message: "Yes or no: is it a rotation?", Status: "pending"})
	mustThread(workspace.NewThreadRequest{TaskID: "training-001", ID: "th_direct", From: "human", To: "solver", Message: "Also check training-002 later", Status: "done"})
	if _, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "training-001"}, workspace.StoreRequest{Key: "arc_task", Agent: "solver",
		Description: "The current ARC-AGI puzzle: task training-001, a 3x3 grid.",
		Value:       json.RawMessage(`{"task_id":"training-001","input_grid":[[0,1,2],[3,4,5],[6,7,8]],"output_grid":[[8,7,6],[5,4,3],[2,1,0]]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeSession, TaskID: "training-001", ThreadID: "th_observer"}, workspace.StoreRequest{Key: "scratch", Agent: "observer",
		Description: "Half-formed ideas.", Value: json.RawMessage(`"maybe a 180 degree rotation"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "house_style", Agent: "coordinator",
		Description: "How answers are written.", Value: json.RawMessage(`"Short sentences. Name the cells you mean."`)}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.Dir(), "tasks", "training-001", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), "tasks", "training-001", "notes", "observations.md"), []byte("- corners swap\n- centre stays 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	mustTask("training-002", "Solve ARC task training-002")
	mustThread(workspace.NewThreadRequest{TaskID: "training-002", ID: "th2_solver", From: "coordinator", To: "solver", Message: "Please solve ARC task training-002."})

	long := strings.Repeat("Réfléchis à la grille «α→β» et décris chaque étape. ", 12)
	mustTask("deep", long)
	parent := "deep"
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("d%d", i)
		mustThread(workspace.NewThreadRequest{TaskID: "deep", ID: id, ParentID: parent, From: fmt.Sprintf("lvl%d", i), To: fmt.Sprintf("lvl%d", i+1),
			Message: fmt.Sprintf("Level %d asks level %d to go one deeper.", i, i+1), Concern: fmt.Sprintf("depth %d", i+1)})
		parent = id
	}

	mustTask("nocard", "Find out who ghost is")
	mustThread(workspace.NewThreadRequest{TaskID: "nocard", ID: "nc_ghost", From: "coordinator", To: "ghost", Message: "Investigate."})
	mustThread(workspace.NewThreadRequest{TaskID: "nocard", ID: "nc_observer", ParentID: "nc_ghost", From: "ghost", To: "observer", Message: "Look at this."})
	return w, c
}

func TestPreambleGolden(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	tests := []struct {
		name      string
		thread    string
		opt       PreambleOptions
		wantEmpty bool
		wantEnv   bool
		wantLevel string
	}{
		{name: "observer-minimal", thread: "th_observer", opt: PreambleOptions{Detail: DetailMinimal}, wantLevel: DetailMinimal},
		{name: "observer-standard", thread: "th_observer", opt: PreambleOptions{Detail: DetailStandard}, wantEnv: true, wantLevel: DetailStandard},
		{name: "observer-verbose", thread: "th_observer", opt: PreambleOptions{Detail: DetailVerbose}, wantEnv: true, wantLevel: DetailVerbose},
		{name: "observer-default", thread: "th_observer", wantEnv: true, wantLevel: DetailStandard},
		{name: "solver-from-coordinator", thread: "th_solver", opt: PreambleOptions{TaskID: "training-001"}, wantEnv: true, wantLevel: DetailStandard},
		{name: "card-detail-minimal", thread: "th_terse", wantLevel: DetailMinimal},
		{name: "human-root", thread: "training-001", wantEmpty: true, wantLevel: DetailStandard},
		{name: "human-direct", thread: "th_direct", wantEmpty: true, wantLevel: DetailStandard},
		{name: "opted-out", thread: "th_tool", opt: PreambleOptions{Detail: DetailVerbose}, wantEmpty: true, wantLevel: DetailVerbose},
		{name: "no-env-data", thread: "th2_solver", wantLevel: DetailStandard},
		{name: "deep-chain", thread: "d6", wantLevel: DetailStandard},
		{name: "deep-chain-verbose", thread: "d6", opt: PreambleOptions{Detail: DetailVerbose, MaxMessageBytes: 40}, wantLevel: DetailVerbose},
		{name: "caller-without-card", thread: "nc_observer", wantLevel: DetailStandard},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Over(w).Preamble(t.Context(), tc.thread, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if p.Empty != tc.wantEmpty || p.EnvHint != tc.wantEnv || p.Detail != tc.wantLevel {
				t.Errorf("empty=%v env_hint=%v detail=%q, want %v %v %q", p.Empty, p.EnvHint, p.Detail, tc.wantEmpty, tc.wantEnv, tc.wantLevel)
			}
			if p.Empty && (p.Text != "" || p.Reason == "") {
				t.Errorf("empty preamble has text %q and reason %q", p.Text, p.Reason)
			}
			if !p.Empty && (!strings.HasPrefix(p.Text, "---\n[Delegation Context]\n") || !strings.HasSuffix(p.Text, "\n---\n")) {
				t.Errorf("text is not a delegation block:\n%s", p.Text)
			}
			got := p.Text
			if p.Empty {
				got = "(empty) " + p.Reason + "\n"
			}
			checkGolden(t, "preamble/"+tc.name+".txt", []byte(got))
			again, err := Over(w).Preamble(t.Context(), tc.thread, tc.opt)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Errorf("second call differs: %+v, %v", again, err)
			}
		})
	}
}

func TestPreambleLevelsNest(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	var prev []string
	for _, d := range []string{DetailMinimal, DetailStandard, DetailVerbose} {
		p, err := Over(w).Preamble(t.Context(), "th_observer", PreambleOptions{Detail: d})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(p.Text, "\n")
		for _, l := range prev {
			if !strings.Contains(p.Text, l) {
				t.Errorf("%s lacks line %q of the level below", d, l)
			}
		}
		if len(lines) <= len(prev) {
			t.Errorf("%s has %d lines, no more than the level below (%d)", d, len(lines), len(prev))
		}
		prev = lines
	}
}

func TestPreambleCutsRootMessage(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	p, err := Over(w).Preamble(t.Context(), "d6", PreambleOptions{MaxMessageBytes: 41})
	if err != nil {
		t.Fatal(err)
	}
	quoted := strings.TrimSuffix(strings.TrimPrefix(p.TaskContext, `The human asked: "`), `"`)
	if !strings.HasSuffix(quoted, "…") {
		t.Fatalf("task context %q is not cut with an ellipsis", p.TaskContext)
	}
	body := strings.TrimSuffix(quoted, "…")
	if len(body) > 41 || !strings.HasPrefix("Réfléchis à la grille «α→β» et décris chaque étape.", body) {
		t.Errorf("cut body %q: want a prefix of the message of at most 41 bytes", body)
	}
}

func TestPreambleRefusesBadDetail(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	if _, err := Over(w).Preamble(t.Context(), "th_observer", PreambleOptions{Detail: "loud"}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("detail loud: got %v, want ErrInvalid", err)
	}
	if _, err := Over(w).Preamble(t.Context(), "th_nowhere", PreambleOptions{}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("missing thread: got %v, want ErrNotFound", err)
	}
}

func TestSystemContextGolden(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	tests := []struct {
		name, agent, task string
		surface           Surface
		want              []string
	}{
		{name: "observer-with-env", agent: "observer", task: "training-001", want: []string{`"observer"`, "Declared capabilities: read_file, list_files", "has 1 environment data entry"}},
		{name: "observer-no-task", agent: "observer", want: []string{"Notices spatial"}},
		{name: "solver-no-env", agent: "solver", task: "training-002", want: []string{"has no environment data yet"}},
		{name: "no-card", agent: "ghost", task: "training-001", want: []string{"Description: (no agent card)", "(none declared)"}},
		{name: "opted-out", agent: "tool", want: []string{"turns the delegation preamble off"}},
		// Each door's agent reads the calls of its door.
		{name: "observer-cli", agent: "observer", task: "training-001", surface: SurfaceCLI, want: []string{"  - `workspaced env list --task training-001`: ", "run `workspaced env list --task training-001` to see it", "This block again: `workspaced system-context --agent observer`."}},
		{name: "observer-http", agent: "observer", task: "training-001", surface: SurfaceHTTP, want: []string{"  - `GET /api/v1/tasks/training-001/env`: ", "— GET /api/v1/tasks/training-001/env to see it", "`GET /api/v1/agent/system-context`"}},
		{name: "observer-files", agent: "observer", task: "training-001", surface: SurfaceFiles, want: []string{"  - `tasks/training-001/env/`: ", "read tasks/training-001/env/ (a JSON file a key, value last) to see it"}},
		{name: "opted-out-cli", agent: "tool", surface: SurfaceCLI, want: []string{"run `workspaced preamble --thread X` to see it", "`workspaced memory list --scope agent --agent tool`"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Over(w).SystemContextFor(t.Context(), tc.agent, tc.task, tc.surface)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(got, s) {
					t.Errorf("missing %q in:\n%s", s, got)
				}
			}
			if tc.surface != "" {
				// No tool of MCP is named to an agent of another door.
				for _, c := range UniversalCapabilities {
					if strings.Contains(c.Name, "_") && strings.Contains(got, c.Name) {
						t.Errorf("the %s system context names the MCP tool %s:\n%s", tc.surface, c.Name, got)
					}
				}
				checkGolden(t, "system-context/"+tc.name+".txt", []byte(got))
				return
			}
			if mcp, _ := Over(w).SystemContext(t.Context(), tc.agent, tc.task); mcp != got {
				t.Errorf("SystemContext differs from SystemContextFor MCP")
			}
			for _, c := range UniversalCapabilities {
				if !strings.Contains(got, "  - "+c.Name+": ") {
					t.Errorf("universal capability %s not listed", c.Name)
				}
			}
			if tc.task == "" && strings.Contains(got, "### Environment data") {
				t.Errorf("env section without a task")
			}
			checkGolden(t, "system-context/"+tc.name+".txt", []byte(got))

			// The list_capabilities tool answers the same block, less the
			// line telling the agent to call list_capabilities.
			tool, err := Over(w).Capabilities(t.Context(), tc.agent, tc.task)
			if err != nil {
				t.Fatal(err)
			}
			const self = "\nYou can use list_capabilities to see full details of your available tools.\n"
			if !strings.Contains(got, self) || tool != strings.Replace(got, self, "", 1) {
				t.Errorf("Capabilities differs from SystemContext by more than the line pointing at list_capabilities:\n%s", tool)
			}
		})
	}
	if _, err := Over(w).SystemContext(t.Context(), "bad name", ""); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("bad agent name: got %v, want ErrInvalid", err)
	}
	if _, err := Over(w).SystemContext(t.Context(), "observer", "no-such-task"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("missing task: got %v, want ErrNotFound", err)
	}
}

func TestUniversalCapabilitiesNamed(t *testing.T) {
	t.Parallel()
	want := []string{"store_env_data", "get_env_data", "list_env_data", "update_env_data", "delete_env_data",
		"store_memory", "get_memory", "list_memory", "delete_memory", "get_memory_history",
		"put_memory_item", "get_memory_item", "delete_memory_item", "search_memory", "list_memory_namespaces",
		"get_task", "get_task_state", "get_plan", "get_subtask", "get_output", "list_reviews", "get_review",
		"write_plan", "amend_plan", "write_review", "claim_subtask", "signal_done",
		"get_delegation_context", "list_capabilities", "skills", "list_tasks", "create_task", "get_context"}
	var got []string
	for _, c := range UniversalCapabilities {
		got = append(got, c.Name)
		if c.Description == "" || strings.Contains(c.Description, "\n") {
			t.Errorf("%s: description %q is not one line", c.Name, c.Description)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// brokenFixture adds a task whose thread files break the chain on purpose:
// a cycle, a parent that lives in another task, a missing parent.
func brokenFixture(t *testing.T) *files.Store {
	t.Helper()
	w := provFixture(t)
	if _, err := w.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "broken", Description: "Threads gone wrong"}); err != nil {
		t.Fatal(err)
	}
	for _, th := range []workspace.Thread{
		{ID: "loop_a", ParentID: "loop_b", TaskID: "broken", From: "solver", To: "observer", CreatedAt: fixtureNow, Status: "active"},
		{ID: "loop_b", ParentID: "loop_a", TaskID: "broken", From: "observer", To: "solver", CreatedAt: fixtureNow, Status: "active"},
		{ID: "self_loop", ParentID: "self_loop", TaskID: "broken", From: "solver", To: "observer", CreatedAt: fixtureNow, Status: "active"},
		{ID: "foreign", ParentID: "th_solver", TaskID: "broken", From: "solver", To: "observer", CreatedAt: fixtureNow, Status: "active"},
		{ID: "orphan", ParentID: "vanished", TaskID: "broken", From: "solver", To: "observer", CreatedAt: fixtureNow, Status: "active"},
	} {
		if err := w.WriteJSON(path.Join(workspace.TaskDir("broken"), "threads", th.ID+".json"), th); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// withDeadline runs f and fails the test if it has not returned within a
// generous deadline: a broken chain must be an error, never a hang.
func withDeadline(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return: a broken chain must not hang", what)
		return nil
	}
}

func TestBrokenChains(t *testing.T) {
	t.Parallel()
	w := brokenFixture(t)
	tests := []struct {
		name, thread string
		want         []string
	}{
		{name: "cycle", thread: "loop_a", want: []string{"loop_a", "cycle"}},
		{name: "self cycle", thread: "self_loop", want: []string{"self_loop", "cycle"}},
		{name: "parent in another task", thread: "foreign", want: []string{"foreign", "th_solver"}},
		{name: "missing parent", thread: "orphan", want: []string{"orphan", "vanished"}},
	}
	for _, tc := range tests {
		for _, task := range []string{"", "broken"} {
			t.Run(fmt.Sprintf("%s/task=%q", tc.name, task), func(t *testing.T) {
				calls := map[string]func() error{
					"preamble": func() error {
						_, err := Over(w).Preamble(t.Context(), tc.thread, PreambleOptions{TaskID: task})
						return err
					},
					"context": func() error {
						_, err := Over(w).Context(t.Context(), tc.thread, ContextOptions{Budget: 1000, TaskID: task})
						return err
					},
				}
				for what, f := range calls {
					err := withDeadline(t, what, f)
					if err == nil {
						t.Fatalf("%s: no error", what)
					}
					for _, s := range tc.want {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("%s: error %q does not name %q", what, err, s)
						}
					}
				}
			})
		}
	}
}
