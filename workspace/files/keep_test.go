package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// taskFile is the path of a file of task t1 on disk.
func taskFile(w *Store, rel string) string {
	return filepath.Join(w.Dir(), "tasks", "t1", filepath.FromSlash(rel))
}

// putFile writes data at rel of task t1, creating its directory.
func putFile(t *testing.T, w *Store, rel, data string) {
	t.Helper()
	p := taskFile(w, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// putState writes a state.json for t1 in which subtask st_1 has the given
// status (and "other" is completed with outputs/shared.json).
func putState(t *testing.T, w *Store, st1 workspace.SubtaskState) {
	t.Helper()
	done := t0
	st := workspace.State{TaskID: "t1", PlanID: "p", PlanVersion: 1, PlanStatus: "approved", Status: "executing", Phase: "work_in_progress",
		LastUpdated: t0, Subtasks: map[string]*workspace.SubtaskState{
			"st_1":  &st1,
			"other": {Status: "completed", Worker: "w9", Attempts: 1, CompletedAt: &done, Output: "outputs/shared.json"},
		},
		Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}, JournalSeq: 3}
	if err := w.WriteJSON("tasks/t1/state.json", st); err != nil {
		t.Fatal(err)
	}
}

// holdLockFile makes sure the task's lock file exists, so that a refusal
// taken under the lock leaves the tree exactly as it was.
func holdLockFile(t *testing.T, w *Store) {
	t.Helper()
	l, err := w.LockTask(context.Background(), "t1", "test")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func readKept(t *testing.T, w *Store, rel string) string {
	t.Helper()
	data, err := os.ReadFile(taskFile(w, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(data)
}

// An output may be rewritten until its subtask is finished; every version
// it replaces is kept, byte for byte, in outputs/history/.
func TestOutputRewriteKeepsHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		state *workspace.SubtaskState // nil: no state.json yet
		done  string                  // status of a done marker for the output waiting in the task directory, "" for none
	}{
		{"no state yet", nil, ""},
		{"in progress, first attempt", &workspace.SubtaskState{Status: "in_progress", Worker: "worker_1", Attempts: 1}, ""},
		{"failed", &workspace.SubtaskState{Status: "failed", Worker: "worker_1", Attempts: 2, Error: "boom"}, ""},
		{"retried: back to pending", &workspace.SubtaskState{Status: "pending", Attempts: 1, Error: "boom"}, ""},
		{"retried: in progress again", &workspace.SubtaskState{Status: "in_progress", Worker: "worker_1", Attempts: 2, Error: "boom"}, ""},
		{"a failed done marker waits", &workspace.SubtaskState{Status: "in_progress", Worker: "worker_1", Attempts: 1}, "failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, clk := newWS(t)
			newTask(t, w, "t1")
			if c.state != nil {
				putState(t, w, *c.state)
			}
			if c.done != "" {
				putFile(t, w, ".done.worker_1.x1", `{"agent_id":"worker_1","subtask_id":"st_1","output_file":"outputs/st_1.json","status":"`+c.done+`","error":"e"}`)
			}
			var versions []string
			for i := range 3 {
				clk.advance(1e9)
				rel, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(fmt.Sprintf(`{"summary":"attempt %d"}`, i)))
				if err != nil || rel != "outputs/st_1.json" {
					t.Fatalf("write %d: %q, %v", i, rel, err)
				}
				versions = append(versions, readKept(t, w, "outputs/st_1.json"))
			}
			for i, want := range versions[:2] {
				if got := readKept(t, w, fmt.Sprintf("outputs/history/st_1.v%d.json", i+1)); got != want {
					t.Errorf("history v%d = %s, want the output it replaced: %s", i+1, got, want)
				}
			}
			if _, err := os.Stat(taskFile(w, "outputs/history/st_1.v3.json")); !os.IsNotExist(err) {
				t.Errorf("a third version was kept for two replacements: %v", err)
			}
			if !strings.Contains(versions[2], `"summary": "attempt 2"`) {
				t.Errorf("the output is not the last one written: %s", versions[2])
			}
			// The kept versions are outputs: a whole-tree check finds them valid.
			p, err := w.ReadProduct(t.Context(), "t1", "outputs/st_1.json")
			if err != nil || p.Output.WorkerID != "worker_1" {
				t.Errorf("the output does not read back: %+v, %v", p, err)
			}
		})
	}
}

// Writing exactly the bytes already there keeps no version: nothing was
// replaced.
func TestOutputSameBytesKeepsNothing(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	doc := []byte(`{"summary":"same","completed_at":"2024-01-15T10:00:00.000Z"}`)
	for range 2 {
		if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(taskFile(w, "outputs/history")); !os.IsNotExist(err) {
		t.Errorf("outputs/history exists after writing the same output twice: %v", err)
	}
}

// A finished subtask's output, and an output a waiting done marker reports
// completed, is final: a second write is a conflict that names why and
// changes nothing.
func TestOutputFinalIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		subtask string
		state   *workspace.SubtaskState
		marker  string // a done marker waiting in the task directory
		want    string
	}{
		{"subtask completed", "st_1", &workspace.SubtaskState{Status: "completed", Worker: "worker_1", Attempts: 1, Output: "outputs/st_1.json"}, "",
			"subtask st_1 was completed by worker_1; its output is final"},
		{"completed with another subtask's output name", "shared", &workspace.SubtaskState{Status: "pending"}, "",
			"subtask other was completed with outputs/shared.json"},
		{"a completed done marker waits", "st_1", &workspace.SubtaskState{Status: "in_progress", Worker: "worker_1", Attempts: 1},
			`{"agent_id":"worker_1","subtask_id":"st_1","output_file":"outputs/st_1.json","status":"completed"}`,
			"done marker .done.worker_1.x1 reports it completed"},
		{"a done marker without status waits", "st_1", nil,
			`{"agent_id":"worker_1","output_file":"outputs/st_1.json"}`,
			"done marker .done.worker_1.x1 reports it completed"},
	}
	// Markers that say nothing readable report nothing: the output stays
	// open (the daemon rejects them in its turn).
	for name, marker := range map[string]string{
		"not JSON":             `{"agent_id":"worker_1","output_file":"outputs/st_1.json"`,
		"nested deep":          `{"agent_id":"worker_1","output_file":"outputs/st_1.json","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}",
		"output_file a number": `{"agent_id":"worker_1","output_file":7}`,
		"another output":       `{"agent_id":"worker_1","output_file":"outputs/st_1.json.bak"}`,
		"failed":               `{"agent_id":"worker_1","output_file":"outputs/st_1.json","status":"failed","error":"x"}`,
	} {
		t.Run("passed over: "+name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			putFile(t, w, ".done.worker_1.x1", marker)
			if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"open"}`)); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
	t.Run("passed over: a symlinked marker", func(t *testing.T) {
		w, _ := newWS(t)
		newTask(t, w, "t1")
		outside := filepath.Join(t.TempDir(), "m")
		os.WriteFile(outside, []byte(`{"agent_id":"worker_1","output_file":"outputs/st_1.json"}`), 0o644)
		if err := os.Symlink(outside, taskFile(w, ".done.worker_1.x1")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"open"}`)); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			if c.state != nil {
				putState(t, w, *c.state)
			}
			if c.marker != "" {
				putFile(t, w, ".done.worker_1.x1", c.marker)
			}
			putFile(t, w, "outputs/"+c.subtask+".json", `{"subtask_id":"`+c.subtask+`","summary":"the finished work"}`)
			holdLockFile(t, w)
			var err error
			refuses(t, w, workspace.ErrConflict, "", func() error {
				_, err = w.WriteOutput(t.Context(), "t1", c.subtask, "worker_1", []byte(`{"summary":"overwrite"}`))
				return err
			})
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to say %q", err, c.want)
			}
			if workspace.HintOf(err) == "" {
				t.Errorf("no hint in %v", err)
			}
		})
	}
}

// A body that contradicts the subtask or the agent it is written for is
// refused naming both values; nothing is written.
func TestOutputContradictionsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"other subtask", `{"subtask_id":"st_2"}`, []string{`subtask_id "st_2"`, `"st_1"`}},
		{"other worker", `{"worker_id":"worker_2"}`, []string{`worker_id "worker_2"`, `"worker_1"`}},
		{"subtask id not a string", `{"subtask_id":7}`, []string{"subtask_id 7", `"st_1"`}},
		{"worker null", `{"worker_id":null}`, []string{"worker_id null", `"worker_1"`}},
		{"subtask id a nested object", `{"subtask_id":{"a":{"b":[1]}}}`, []string{`subtask_id {"a":{"b":[1]}}`}},
		{"subtask id with a path", `{"subtask_id":"../st_1"}`, []string{`subtask_id "../st_1"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			var err error
			refuses(t, w, workspace.ErrInvalid, "", func() error {
				_, err = w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(c.body))
				return err
			})
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to name %s", err, s)
				}
			}
		})
	}
	// The same values agree.
	w, _ := newWS(t)
	newTask(t, w, "t1")
	for _, body := range []string{`{"subtask_id":"st_1","worker_id":"worker_1"}`, `{"subtask_id":"","worker_id":""}`} {
		if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(body)); err != nil {
			t.Errorf("agreeing body %s refused: %v", body, err)
		}
	}
	if p, err := w.ReadProduct(t.Context(), "t1", "outputs/st_1.json"); err != nil || p.Output.SubtaskID != "st_1" || p.Output.WorkerID != "worker_1" {
		t.Errorf("empty ids not filled: %+v, %v", p.Output, err)
	}
}

// What lies where an output, or the history, should be is never followed
// or read past its limits: the write is refused and nothing changes,
// inside the task or outside it.
func TestOutputReplaceRefusesUnsafe(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, w *Store, outside string)
	}{
		{"output is a symlink out", func(t *testing.T, w *Store, outside string) {
			os.MkdirAll(taskFile(w, "outputs"), 0o755)
			if err := os.Symlink(filepath.Join(outside, "secret.json"), taskFile(w, "outputs/st_1.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"output is a FIFO", func(t *testing.T, w *Store, outside string) {
			os.MkdirAll(taskFile(w, "outputs"), 0o755)
			if err := syscall.Mkfifo(taskFile(w, "outputs/st_1.json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"output over the size limit", func(t *testing.T, w *Store, outside string) {
			putFile(t, w, "outputs/st_1.json", `{"summary":"`+strings.Repeat("x", 17<<20)+`"}`)
		}},
		{"history is a symlink to another task", func(t *testing.T, w *Store, outside string) {
			newTask(t, w, "t2")
			putFile(t, w, "outputs/st_1.json", `{"subtask_id":"st_1"}`)
			os.MkdirAll(filepath.Join(w.Dir(), "tasks", "t2", "outputs"), 0o755)
			if err := os.Symlink("../../t2/outputs", taskFile(w, "outputs/history")); err != nil {
				t.Fatal(err)
			}
		}},
		{"outputs is a symlink out", func(t *testing.T, w *Store, outside string) {
			if err := os.Symlink(outside, taskFile(w, "outputs")); err != nil {
				t.Fatal(err)
			}
		}},
		{"history is a file", func(t *testing.T, w *Store, outside string) {
			putFile(t, w, "outputs/st_1.json", `{"subtask_id":"st_1"}`)
			putFile(t, w, "outputs/history", "not a directory")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"subtask_id":"st_1","summary":"outside"}`), 0o644)
			c.setup(t, w, outside)
			holdLockFile(t, w)
			refuses(t, w, workspace.ErrUnsafe, outside, func() error {
				_, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"new"}`))
				return err
			})
		})
	}
}

// A state.json that cannot be read leaves no way to know whether the
// output is final: the write is refused rather than guessed.
func TestOutputUnreadableStateRefuses(t *testing.T) {
	t.Parallel()
	for name, state := range map[string]string{
		"truncated":     `{"task_id": "t1", "status": "exec`,
		"not the state": `{"hello": "world"}`,
		"deep":          strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		t.Run(name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			putFile(t, w, "state.json", state)
			holdLockFile(t, w)
			before := listing(t, w.Dir())
			_, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(`{"summary":"x"}`))
			if err == nil || !strings.Contains(err.Error(), "whether it is final") {
				t.Errorf("err = %v, want a refusal saying the state could not be read", err)
			}
			if after := listing(t, w.Dir()); after != before {
				t.Errorf("the tree changed")
			}
		})
	}
}

// Writers racing on one output never lose a version: every document
// written is either the output or one of the kept versions.
func TestOutputConcurrentWritesKeepEveryVersion(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := w.WriteOutput(t.Context(), "t1", "st_1", "worker_1", []byte(fmt.Sprintf(`{"summary":"g%d-%d"}`, g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	collect := func(rel string) {
		var o workspace.Output
		if err := json.Unmarshal([]byte(readKept(t, w, rel)), &o); err != nil {
			t.Fatal(err)
		}
		if seen[o.Summary] {
			t.Errorf("%s repeats %s", rel, o.Summary)
		}
		seen[o.Summary] = true
	}
	collect("outputs/st_1.json")
	for n := 1; n < writers*each; n++ {
		collect(fmt.Sprintf("outputs/history/st_1.v%d.json", n))
	}
	if len(seen) != writers*each {
		t.Errorf("%d versions found, want %d", len(seen), writers*each)
	}
}
