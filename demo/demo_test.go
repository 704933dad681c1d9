package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestRun plays the whole flow in-process (under -race it checks the
// agents, the follower and the daemon share nothing unsafely) and checks
// the summary read back from the tree.
func TestRun(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	var out bytes.Buffer
	s, err := Run(context.Background(), Config{Root: root, Agents: 2, TimeScale: 0.01, Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if s.State.Status != "completed" || s.State.RevisionCount != 1 {
		t.Fatalf("state: %s, revision_count %d", s.State.Status, s.State.RevisionCount)
	}
	if got := len(s.Subtasks); got != 7 {
		t.Fatalf("%d subtasks, want 7", got)
	}
	for _, st := range s.Subtasks {
		want := 1
		if st.ID == FailingSubtask {
			want = 2
		}
		if st.Status != "completed" || st.Attempts != want || (st.Worker != "worker_1" && st.Worker != "worker_2") {
			t.Errorf("subtask %+v: want completed by worker_1 or worker_2 after %d attempts", st, want)
		}
	}
	if len(s.PlanVersions) != 2 || s.PlanVersions[0] != 1 || s.PlanVersions[1] != 2 {
		t.Errorf("plan versions %v, want [1 2]", s.PlanVersions)
	}
	if !s.FrictionByDetectors || len(s.Friction) != 2 {
		t.Errorf("friction: by detectors %v, %d entries; want the daemon's 2", s.FrictionByDetectors, len(s.Friction))
	}
	var keys []string
	for _, it := range s.EnvKeys {
		keys = append(keys, it.Key)
	}
	if strings.Join(keys, ",") != "arc_task,observed_patterns,solution_attempts" {
		t.Errorf("env keys %v", keys)
	}
	if !strings.Contains(s.Preamble, "human → coordinator → solver → you (observer)") {
		t.Errorf("preamble lacks the chain:\n%s", s.Preamble)
	}
	if !strings.Contains(out.String(), "task_completed") {
		t.Errorf("the event stream lacks task_completed:\n%s", out.String())
	}
}

// TestRunExistingWorkspace: in a workspace without tasks the demo leaves
// workspace.json alone, so with the default thresholds the detectors do
// not fire and the demo adds the friction itself.
func TestRunExistingWorkspace(t *testing.T) {
	root := t.TempDir()
	settings := []byte("{\"lock_timeout\": \"10s\"}\n")
	if err := os.WriteFile(filepath.Join(root, "workspace.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Run(context.Background(), Config{Root: root, Agents: 1, TimeScale: 0.01, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.FrictionByDetectors || len(s.Friction) != 2 {
		t.Errorf("friction: by detectors %v, %d entries; want 2 added by the demo", s.FrictionByDetectors, len(s.Friction))
	}
	got, err := os.ReadFile(filepath.Join(root, "workspace.json"))
	if err != nil || !bytes.Equal(got, settings) {
		t.Errorf("workspace.json changed: %q, %v", got, err)
	}
}

func TestRunRefusesRoot(t *testing.T) {
	cases := []struct {
		name  string
		files []string
	}{
		{"tasks", []string{"tasks/t1/task.json"}},
		{"other files", []string{"notes.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range c.files {
				p := filepath.Join(root, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Run(context.Background(), Config{Root: root, TimeScale: 0.01})
			if !errors.Is(err, ErrRootInUse) {
				t.Fatalf("Run: %v, want ErrRootInUse", err)
			}
			if _, err := os.Stat(filepath.Join(root, "workspace.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused run wrote workspace.json: %v", err)
			}
		})
	}
}
