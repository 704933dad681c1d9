package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestDemo runs `workspaced demo` as a user does, with a short time scale,
// and checks the tree it leaves: it validates, the Hivemind task completed
// after one revision, the subtask that failed once took two attempts, and
// friction is on record.
func TestDemo(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	w.Root = filepath.Join(w.Dir, "run")
	r := w.Run("demo", "--root", w.Root, "--agents", "4", "--time-scale", "0.01")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("demo: want exit 0 and empty stderr, got %v", r)
	}
	for _, want := range []string{
		"a fresh workspace at " + w.Root,
		"plan_revision_needed", "plan_approved", "claim_refused", "work_failed st_4",
		"checkpoint_approved checkpoint_1", "task_completed",
		"receives this preamble", "Delegation chain: human → coordinator → solver → you (observer)",
		"Summary", "revision_count 1", "recorded by the daemon's detectors",
		"workspaced --root " + w.Root + " task show --task auth_api",
		"cd " + w.Root + " && git init -q && git add -A && git commit -qm run",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", r.Stdout)
	}
	if v := w.Run("validate", w.Root); v.Code != 0 {
		t.Fatalf("validate the demo's tree: %v", v)
	}

	var st workspace.State
	readJSONFile(t, filepath.Join(w.Root, "tasks", "auth_api", "state.json"), &st)
	if st.Status != "completed" || st.RevisionCount != 1 || st.PlanVersion != 2 {
		t.Fatalf("final state: status %s, revision_count %d, plan v%d; want completed, 1, v2", st.Status, st.RevisionCount, st.PlanVersion)
	}
	if len(st.Subtasks) != 7 {
		t.Fatalf("final state has %d subtasks, want 7", len(st.Subtasks))
	}
	workers := map[string]bool{}
	for id, ss := range st.Subtasks {
		want := 1
		if id == "st_4" {
			want = 2
		}
		if ss.Status != "completed" || ss.Attempts != want {
			t.Errorf("subtask %s: %s after %d attempts, want completed after %d", id, ss.Status, ss.Attempts, want)
		}
		var out workspace.Output
		readJSONFile(t, filepath.Join(w.Root, "tasks", "auth_api", "outputs", id+".json"), &out)
		if out.WorkerID != ss.Worker || out.Status != "completed" {
			t.Errorf("outputs/%s.json: worker %s status %s; state says %s completed", id, out.WorkerID, out.Status, ss.Worker)
		}
		workers[ss.Worker] = true
	}
	if cp := st.Checkpoints["checkpoint_1"]; cp == nil || cp.Status != "approved" {
		t.Errorf("checkpoint_1: %+v, want approved", cp)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "tasks", "auth_api", "plans", "plan_v1.json")); err != nil {
		t.Errorf("plan v1 not kept: %v", err)
	}

	var fr struct {
		Entries []struct {
			Type          string   `json:"type"`
			AffectedTasks []string `json:"affected_tasks"`
		} `json:"entries"`
	}
	readJSONFile(t, filepath.Join(w.Root, "friction", "friction.json"), &fr)
	types := map[string]bool{}
	for _, e := range fr.Entries {
		types[e.Type] = true
	}
	if !types["repeated_revision"] || !types["worker_failure"] {
		t.Errorf("friction entries %+v: want repeated_revision and worker_failure", fr.Entries)
	}

	for _, key := range []string{"arc_task", "observed_patterns", "solution_attempts"} {
		if _, err := os.Stat(filepath.Join(w.Root, "tasks", "arc_training_001", "env", key+".json")); err != nil {
			t.Errorf("env key %s: %v", key, err)
		}
	}
	var patterns struct {
		StoredBy string   `json:"stored_by"`
		Value    []string `json:"value"`
	}
	readJSONFile(t, filepath.Join(w.Root, "tasks", "arc_training_001", "env", "observed_patterns.json"), &patterns)
	if patterns.StoredBy != "observer" || strings.Join(patterns.Value, ",") != "rotation_180,colour_preserving" {
		t.Errorf("observed_patterns: %+v", patterns)
	}
}

// TestDemoRefusesUsedRoot checks the demo never plays over tasks already
// in a root, and refuses bad flags.
func TestDemoRefusesUsedRoot(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	before := w.Tree()
	r := w.Run("demo", "--root", w.Root, "--time-scale", "0.01")
	clitest.CheckFailure(t, r, exitConflict, "already holds tasks", []string{"demo"})
	clitest.SameTree(t, before, w.Tree(), "a refused demo")

	other := filepath.Join(w.Dir, "notes")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "todo.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.CheckFailure(t, w.Run("demo", "--root", other), exitConflict, "not a workspace", []string{"demo"})

	for _, args := range [][]string{{"demo", "--agents", "0"}, {"demo", "--time-scale", "-1"}, {"demo", "extra"}} {
		clitest.CheckFailure(t, w.Run(args...), exitUsage, "demo", args)
	}
}

func readJSONFile(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
