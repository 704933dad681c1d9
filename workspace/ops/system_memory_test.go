package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// memorySectionOf returns the "What you remember" part of a system
// context, or "" when there is none.
func memorySectionOf(text string) string {
	i := strings.Index(text, "\n### What you remember\n")
	if i < 0 {
		return ""
	}
	rest := text[i+1:]
	if j := strings.Index(rest[4:], "\n### "); j >= 0 {
		rest = rest[:j+5]
	}
	return rest
}

func TestSystemContextMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := func(t *testing.T, w *files.Store, s workspace.Scope, key, desc string) {
		t.Helper()
		if _, err := w.StoreEntry(ctx, s, workspace.StoreRequest{Key: key, Agent: "observer", Description: desc, Value: json.RawMessage(`"v"`)}); err != nil {
			t.Fatal(err)
		}
	}
	agentScope := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "observer"}
	tests := []struct {
		name  string
		setup func(t *testing.T, w *files.Store)
		agent string
		want  []string // substrings of the memory section
		none  bool     // no memory section at all
	}{
		{name: "memory-empty", agent: "observer", setup: func(t *testing.T, w *files.Store) {
			if err := w.DeleteEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.DeleteRequest{Key: "house_style", Agent: "test"}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"You have no memory entries yet, and there is no global memory."}},
		{name: "memory-some", agent: "observer", setup: func(t *testing.T, w *files.Store) {
			store(t, w, agentScope, "grid_habits", "How I read grids:\nrow by row,   then columns.")
			store(t, w, agentScope, "odd key: with colon", "Keys are quoted when they are not plain words.")
			store(t, w, agentScope, "long", strings.Repeat("é", 200))
			store(t, w, agentScope, "bare", "")
		}, want: []string{
			"Your memory (yours alone, kept across tasks):\n- bare\n- grid_habits: How I read grids: row by row, then columns.\n- long: " + strings.Repeat("é", 80) + "…\n- \"odd key: with colon\": Keys are quoted",
			"Global memory (shared by every agent and task):\n- house_style: How answers are written.\n",
		}},
		{name: "memory-many", agent: "observer", setup: func(t *testing.T, w *files.Store) {
			for i := 0; i < 120; i++ {
				store(t, w, agentScope, fmt.Sprintf("note_%03d", i), fmt.Sprintf("Note number %d of the observer, about one grid.", i))
			}
			for i := 0; i < 30; i++ {
				store(t, w, workspace.Scope{Kind: workspace.ScopeGlobal}, fmt.Sprintf("rule_%02d", i), "A rule everyone follows.")
			}
		}, want: []string{"- note_000: Note number 0", "- … and 103 more not listed here\nGlobal memory", "- house_style: How answers are written.\n- rule_00: A rule everyone follows.\n",
			"- rule_26: A rule everyone follows.\n- … and 3 more not listed here\n"}},
		{name: "memory-opt-out", agent: "observer", none: true, setup: func(t *testing.T, w *files.Store) {
			store(t, w, agentScope, "grid_habits", "How I read grids.")
			cards, err := w.LoadAgents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range cards.Agents {
				if cards.Agents[i].Name == "observer" {
					cards.Agents[i].MemoryInContext = boolPtr(false)
				}
			}
			if err := w.WriteJSON(workspace.AgentsFile, cards); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "memory-unlistable", agent: "observer", setup: func(t *testing.T, w *files.Store) {
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"key":"secret","short_description":"SECRET","stored_by":"x","created_at":"2024-01-15T10:00:00Z","updated_at":"2024-01-15T10:00:00Z","version":1,"value":1}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(w.Dir(), "memory", "agents", "observer")); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"Your memory (yours alone, kept across tasks):\n- (could not be listed: ", "- house_style: How answers are written."}},
		{name: "memory-no-card", agent: "ghost", want: []string{"Your memory (yours alone, kept across tasks):\n- (none)\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := provFixture(t)
			if tc.setup != nil {
				tc.setup(t, w)
			}
			got, err := Over(w).SystemContext(t.Context(), tc.agent, "training-001")
			if err != nil {
				t.Fatal(err)
			}
			sec := memorySectionOf(got)
			if tc.none != (sec == "") {
				t.Fatalf("memory section present=%v, want %v:\n%s", sec != "", !tc.none, got)
			}
			for _, s := range tc.want {
				if !strings.Contains(sec, s) {
					t.Errorf("memory section lacks %q:\n%s", s, sec)
				}
			}
			if strings.Contains(got, "SECRET") || strings.Contains(got, `"v"`) {
				t.Errorf("a value or an outside file reached the text:\n%s", got)
			}
			listed := 0
			for _, l := range strings.Split(sec, "\n") {
				if strings.HasPrefix(l, "- ") && !strings.HasPrefix(l, "- …") && !strings.HasPrefix(l, "- (") {
					listed += len(l) + 1
				}
			}
			if listed > SystemMemoryMaxBytes {
				t.Errorf("listed %d bytes of keys, over the bound %d", listed, SystemMemoryMaxBytes)
			}
			if again, _ := Over(w).SystemContext(t.Context(), tc.agent, "training-001"); again != got {
				t.Errorf("second call differs")
			}
			checkGolden(t, "system-context/"+tc.name+".txt", []byte(got))
		})
	}
}

func TestPreambleCallerStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name     string
		progress string // set on th_solver ("" leaves it)
		approach *string
		opt      PreambleOptions
		thread   string
		step     string // want CallerStep
	}{
		{name: "caller-progress", progress: "Loaded the task and is consulting you for pattern analysis.", thread: "th_observer",
			step: "Loaded the task and is consulting you for pattern analysis."},
		{name: "caller-progress-verbose", progress: "Loaded the task and is consulting you for pattern analysis.", thread: "th_observer", opt: PreambleOptions{Detail: DetailVerbose},
			step: "Loaded the task and is consulting you for pattern analysis."},
		{name: "caller-progress-minimal", progress: "Loaded the task.", thread: "th_observer", opt: PreambleOptions{Detail: DetailMinimal}},
		{name: "caller-approach", thread: "th_observer", step: "Load the grid, consult the observer"},
		{name: "caller-nothing", approach: ptr(""), thread: "th_observer"},
		{name: "caller-progress-cut", progress: strings.Repeat("Rows first,\n then   columns. ", 10), thread: "th_observer", opt: PreambleOptions{MaxMessageBytes: 40},
			step: "Rows first, then columns. Rows first, th…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := provFixture(t)
			u := workspace.ThreadUpdate{Approach: tc.approach}
			if tc.progress != "" {
				u.Progress = &tc.progress
			}
			if u != (workspace.ThreadUpdate{}) {
				if _, err := w.UpdateThread(ctx, "training-001", "th_solver", "solver", u); err != nil {
					t.Fatal(err)
				}
			}
			p, err := Over(w).Preamble(t.Context(), tc.thread, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if p.CallerStep != tc.step {
				t.Errorf("caller step %q, want %q", p.CallerStep, tc.step)
			}
			line := ""
			for _, l := range strings.Split(p.Text, "\n") {
				if strings.HasPrefix(l, "Task context: ") {
					line = l
				}
			}
			if tc.step != "" && !strings.HasSuffix(line, `". solver's `+map[bool]string{true: "latest step", false: "approach"}[tc.progress != ""]+`: "`+tc.step+`"`) {
				t.Errorf("task context line %q does not end with the caller's step", line)
			}
			if tc.step == "" && strings.Contains(p.Text, "solver's latest step") || tc.step == "" && strings.Contains(p.Text, "solver's approach") {
				t.Errorf("a step without one:\n%s", p.Text)
			}
			checkGolden(t, "preamble/"+tc.name+".txt", []byte(p.Text))
		})
	}
}

// The caller's step is its own thread's: a parent addressed to someone
// else says nothing about the caller.
func TestMemoryShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, bound, wa, wb int }{
		{10, 20, 100, 10, 20},
		{100, 0, 100, 100, 0},
		{30, 200, 100, 30, 70},
		{200, 30, 100, 70, 30},
		{200, 200, 100, 50, 50},
		{200, 200, 101, 50, 51},
		{0, 0, 0, 0, 0},
	} {
		if got := memoryShares(tc.a, tc.b, tc.bound); got != [2]int{tc.wa, tc.wb} {
			t.Errorf("memoryShares(%d, %d, %d) = %v, want [%d %d]", tc.a, tc.b, tc.bound, got, tc.wa, tc.wb)
		}
	}
}

func TestCallerStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		chain      []workspace.Thread
		step, what string
	}{
		{"root thread", []workspace.Thread{{ID: "t", To: "a", Progress: "p"}}, "", ""},
		{"progress first", []workspace.Thread{{ID: "t", To: "a", Progress: " p ", Approach: "a"}, {ID: "x", From: "a", To: "b"}}, "p", "latest step"},
		{"approach else", []workspace.Thread{{ID: "t", To: "a", Approach: "a"}, {ID: "x", From: "a", To: "b"}}, "a", "approach"},
		{"blank", []workspace.Thread{{ID: "t", To: "a", Progress: "  ", Approach: "\n"}, {ID: "x", From: "a", To: "b"}}, "", ""},
		{"parent not the caller's", []workspace.Thread{{ID: "t", To: "a", Progress: "p"}, {ID: "x", From: "z", To: "b"}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			step, what := callerStep(tc.chain)
			if step != tc.step || what != tc.what {
				t.Errorf("got %q %q, want %q %q", step, what, tc.step, tc.what)
			}
		})
	}
}
