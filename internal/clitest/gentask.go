package clitest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// GenTask is one task directory a test writes directly under a directory
// root, as the daemon and agents would have left it.
type GenTask struct {
	ID     string
	Status string        // "" writes no state.json (a task the daemon has not seen yet)
	Age    time.Duration // completed_at is now-Age for a finished task
	// NoCompletedAt leaves completed_at out of a finished task's state.
	NoCompletedAt bool
	// Summarized writes only task.json, state.json and events.log.
	Summarized bool
}

func (g GenTask) finished() bool {
	return g.Status == vocab.StatusCompleted || g.Status == vocab.StatusFailed || g.Status == vocab.StatusCancelled
}

// WriteGenTask writes tasks/<id> under root with five files (task.json,
// state.json, events.log, plan.json, outputs/st_1.json), or three if it is
// summarised. Every JSON file is canonical and valid against its schema.
func WriteGenTask(t testing.TB, root string, g GenTask, now time.Time) {
	t.Helper()
	dir := filepath.Join(root, "tasks", g.ID)
	done := now.Add(-g.Age).UTC().Truncate(time.Millisecond)
	created := done.Add(-time.Hour)
	docs := map[string]any{
		"task.json": workspace.Task{ID: g.ID, CreatedAt: created, Description: "generated task " + g.ID, SubmittedBy: "human"},
	}
	if g.Status != "" {
		docs["state.json"] = g.state(created, done)
	}
	if !g.Summarized {
		docs["plan.json"] = workspace.Plan{ID: "plan_1", TaskID: g.ID, Version: 1, CreatedAt: created, CreatedBy: "coordinator",
			Status: "approved", Subtasks: []workspace.Subtask{{ID: "st_1", Description: "do the work of " + g.ID, EstimatedComplexity: "low"}}}
		docs["outputs/st_1.json"] = workspace.Output{SubtaskID: "st_1", WorkerID: "worker_1", CompletedAt: &done, Status: "completed",
			Summary: "the work of " + g.ID + ", done"}
	}
	kinds := map[string]schemas.Kind{"task.json": schemas.KindTask, "state.json": schemas.KindState,
		"plan.json": schemas.KindPlan, "outputs/st_1.json": schemas.KindOutput}
	for name, v := range docs {
		data, err := atomicfile.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(kinds[name], data); err != nil {
			t.Fatalf("generated %s of %s does not validate: %v", name, g.ID, err)
		}
		WriteFileAll(t, filepath.Join(dir, filepath.FromSlash(name)), data)
	}
	stamp := func(tm time.Time) string { return tm.UTC().Format("2006-01-02T15:04:05.000Z") }
	events := stamp(created) + " task_created " + g.ID + "\n" +
		stamp(created) + " work_assigned " + g.ID + " st_1 worker_1\n"
	if g.finished() {
		events += stamp(done) + " task_" + g.Status + " " + g.ID + "\n"
	}
	WriteFileAll(t, filepath.Join(dir, "events.log"), []byte(events))
}

// state is the task's state.json: its one subtask in progress, or done
// at done when the task is finished.
func (g GenTask) state(created, done time.Time) workspace.State {
	st := workspace.State{
		TaskID: g.ID, PlanID: "plan_1", PlanVersion: 1, PlanStatus: "approved",
		Status: g.Status, Phase: "executing", StartedAt: &created, LastUpdated: done,
		Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "in_progress", Worker: "worker_1", Attempts: 1, StartedAt: &created}},
		Checkpoints: map[string]*workspace.CheckpointState{},
		Workers:     map[string]*workspace.WorkerState{"worker_1": {Status: "busy"}},
		Errors:      []workspace.StateError{},
	}
	if g.finished() {
		st.Phase = "done"
		st.Subtasks["st_1"] = &workspace.SubtaskState{Status: "completed", Worker: "worker_1", Attempts: 1,
			StartedAt: &created, CompletedAt: &done, Output: "outputs/st_1.json"}
		st.Workers["worker_1"].Status = "available"
		if !g.NoCompletedAt {
			st.CompletedAt = &done
		}
	}
	return st
}

// WriteFileAll writes data to name, making its directories first.
func WriteFileAll(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteGenTasks writes the tasks gs as WriteGenTask does, quickly: the
// first task of each kind (status, age, summarised) is written and
// checked against the schemas by WriteGenTask, and the others are copies
// of its files with its id replaced, written by a few goroutines.
func WriteGenTasks(t testing.TB, root string, gs []GenTask, now time.Time) {
	t.Helper()
	type kind struct {
		status     string
		age        time.Duration
		summarized bool
	}
	type file struct {
		rel  string
		data []byte
	}
	templates := map[kind]GenTask{}
	files := map[kind][]file{}
	for _, g := range gs {
		k := kind{g.Status, g.Age, g.Summarized}
		if _, ok := templates[k]; ok {
			continue
		}
		templates[k] = g
		WriteGenTask(t, root, g, now)
		dir := filepath.Join(root, "tasks", g.ID)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			files[k] = append(files[k], file{rel, data})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	work := make(chan GenTask)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Go(func() {
			for g := range work {
				k := kind{g.Status, g.Age, g.Summarized}
				tmpl := templates[k]
				if tmpl.ID == g.ID {
					continue
				}
				for _, f := range files[k] {
					name := filepath.Join(root, "tasks", g.ID, f.rel)
					err := os.MkdirAll(filepath.Dir(name), 0o755)
					if err == nil {
						err = os.WriteFile(name, bytes.ReplaceAll(f.data, []byte(tmpl.ID), []byte(g.ID)), 0o644)
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			}
		})
	}
	for _, g := range gs {
		work <- g
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// PlanJSON is a plan of n subtasks, st_1 … st_n, as `plan write` reads
// it; st_2 depends on st_1 when deps.
func PlanJSON(n int, deps bool) string {
	var subs []string
	for i := 1; i <= n; i++ {
		d := ""
		if deps && i == 2 {
			d = `,"dependencies":["st_1"]`
		}
		subs = append(subs, fmt.Sprintf(`{"id":"st_%d","description":"subtask %d"%s}`, i, i, d))
	}
	return `{"summary":"the plan","subtasks":[` + strings.Join(subs, ",") + `]}`
}
