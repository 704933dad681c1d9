package files

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// taskTree is a workspace with task v1 and, beside it in tasks/, every
// kind of entry that is not a task directory.
func taskTree(t *testing.T) *Store {
	t.Helper()
	w, _ := newWS(t)
	newTask(t, w, "v1")
	if _, err := w.NewThread(context.Background(), workspace.NewThreadRequest{TaskID: "v1", ID: "th1", From: "a", To: "b", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(w.Dir(), "tasks")
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return os.Symlink("v1", filepath.Join(tasks, "alias")) },
		func() error { return os.Symlink(filepath.Join(outside, "evil"), filepath.Join(tasks, "escape")) },
		func() error { return os.Symlink("nowhere", filepath.Join(tasks, "dangling")) },
		func() error { return os.Symlink("alias", filepath.Join(tasks, "chain")) },
		func() error { return os.WriteFile(filepath.Join(tasks, "afile"), []byte("{}"), 0o644) },
		func() error { return syscall.Mkfifo(filepath.Join(tasks, "fifo"), 0o644) },
		func() error { return os.Mkdir(filepath.Join(tasks, "bad name"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(tasks, "\xff\xfe"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(tasks, ".prune-v1"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(tasks, "creating"), 0o755) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestTaskIDsSkipNonDirectories: tasks/ is listed as its real directories
// only; every other entry but the dot entries is reported with why.
func TestTaskIDsSkipNonDirectories(t *testing.T) {
	t.Parallel()
	w := taskTree(t)
	ids, err := w.TaskIDs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"creating", "v1"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("TaskIDs = %q, want %q", ids, want)
	}
	ids2, skipped, err := w.TaskIDsReport()
	if err != nil || !reflect.DeepEqual(ids2, ids) {
		t.Fatalf("TaskIDsReport ids = %q, %v; want %q", ids2, err, ids)
	}
	got := map[string]string{}
	for _, s := range skipped {
		got[s.File] = s.Reason
	}
	want := map[string]string{
		"tasks/alias":    `is a symlink (to "v1")`,
		"tasks/escape":   "is a symlink (to ",
		"tasks/dangling": `is a symlink (to "nowhere")`,
		"tasks/chain":    `is a symlink (to "alias")`,
		"tasks/afile":    "is a regular file",
		"tasks/fifo":     "is a FIFO",
		"tasks/bad name": "not a valid task id",
		"tasks/\xff\xfe": "not UTF-8",
	}
	for file, phrase := range want {
		if !strings.Contains(got[file], phrase) {
			t.Errorf("skipped %q: reason %q, want it to say %q", file, got[file], phrase)
		}
	}
	if len(got) != len(want) {
		t.Errorf("skipped %d entries, want %d: %q", len(got), len(want), got)
	}
	for _, id := range []string{"v1", "creating"} {
		if !w.IsTaskDir(id) {
			t.Errorf("IsTaskDir(%q) = false", id)
		}
	}
	for _, id := range []string{"alias", "escape", "dangling", "chain", "afile", "fifo", "bad name", "\xff\xfe", ".prune-v1", "missing", "", "..", "v1/../v1"} {
		if w.IsTaskDir(id) {
			t.Errorf("IsTaskDir(%q) = true", id)
		}
	}
}

// TestSymlinkedTaskRefused: every task operation naming tasks/alias →
// v1 is refused with an error saying it is a symlink, and v1 is left
// exactly as it was.
func TestSymlinkedTaskRefused(t *testing.T) {
	t.Parallel()
	w := taskTree(t)
	ctx := context.Background()
	v1 := filepath.Join(w.Dir(), "tasks", "v1")
	before := listing(t, v1)
	plan := []byte(`{"summary": "s", "subtasks": [{"id": "st_1", "description": "d"}]}`)
	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "alias"}
	session := workspace.Scope{Kind: workspace.ScopeSession, TaskID: "alias", ThreadID: "th1"}
	val := json.RawMessage(`1`)
	desc := "new"
	ops := []struct {
		name string
		call func() error
	}{
		{"GetTask", func() error { _, err := w.GetTask(ctx, "alias"); return err }},
		{"CreateTask", func() error {
			_, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "alias", Description: "d"})
			return err
		}},
		{"ReadState", func() error { _, err := w.ReadState(ctx, "alias"); return err }},
		{"WritePlan", func() error { _, err := w.WritePlan(ctx, "alias", "a", plan); return err }},
		{"ReadPlan", func() error { _, err := w.ReadPlan(ctx, "alias", 0); return err }},
		{"WriteOutput", func() error {
			_, err := w.WriteOutput(ctx, "alias", "st_1", "a", []byte(`{"summary": "s"}`))
			return err
		}},
		{"WriteReview", func() error {
			_, err := w.WriteReview(ctx, "alias", "r1", "a", []byte(`{"type": "plan_review", "verdict": "approved"}`))
			return err
		}},
		{"WriteClaim", func() error { _, err := w.WriteClaim(ctx, "alias", "a", "st_1"); return err }},
		{"WriteDone", func() error {
			_, err := w.WriteDone(ctx, workspace.DoneRequest{TaskID: "alias", Agent: "a", Status: "cancelled"})
			return err
		}},
		{"ReadProduct", func() error { _, err := w.ReadProduct(ctx, "alias", "plan.json"); return err }},
		{"StoreEntry", func() error {
			_, err := w.StoreEntry(ctx, env, workspace.StoreRequest{Key: "k", Description: "d", Value: val, Agent: "a"})
			return err
		}},
		{"StoreEntry session", func() error {
			_, err := w.StoreEntry(ctx, session, workspace.StoreRequest{Key: "k", Description: "d", Value: val, Agent: "a"})
			return err
		}},
		{"GetEntry", func() error { _, err := w.GetEntry(ctx, env, "k"); return err }},
		{"UpdateEntry", func() error {
			_, err := w.UpdateEntry(ctx, env, workspace.UpdateRequest{Key: "k", Description: &desc, Agent: "a"})
			return err
		}},
		{"DeleteEntry", func() error { return w.DeleteEntry(ctx, env, workspace.DeleteRequest{Key: "k", Agent: "a"}) }},
		{"ListEntries", func() error { _, err := w.ListEntries(ctx, env); return err }},
		{"NewThread", func() error {
			_, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "alias", ID: "th2", From: "a", To: "b", Message: "m"})
			return err
		}},
		{"GetThread", func() error { _, err := w.GetThread(ctx, "alias", "th1"); return err }},
		{"ListThreads", func() error { _, err := w.ListThreads(ctx, "alias"); return err }},
		{"UpdateThread", func() error {
			_, err := w.UpdateThread(ctx, "alias", "th1", "a", workspace.ThreadUpdate{Progress: &desc})
			return err
		}},
		{"ResolveThread", func() error { _, err := w.ResolveThread(ctx, "alias"); return err }},
		{"AppendEvent", func() error { return w.AppendEvent(ctx, workspace.Event{Name: "x", TaskID: "alias"}) }},
		{"ReadEvents", func() error { _, _, err := w.ReadEvents(ctx, "alias"); return err }},
		{"LockTask", func() error {
			l, err := w.LockTask(ctx, "alias", "a")
			if err == nil {
				l.Release()
			}
			return err
		}},
		{"LockNamed", func() error {
			l, err := w.LockNamed(ctx, "alias", "n", "a")
			if err == nil {
				l.Release()
			}
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			err := op.call()
			if !errors.Is(err, workspace.ErrUnsafe) || !strings.Contains(err.Error(), "tasks/alias is a symlink") {
				t.Fatalf("%s on tasks/alias → v1: err = %v, want a refusal naming the symlink", op.name, err)
			}
			if workspace.HintOf(err) == "" {
				t.Errorf("%s: no hint", op.name)
			}
		})
	}
	if after := listing(t, v1); after != before {
		t.Fatalf("tasks/v1 changed through the link:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The same operations through a link leading outside the root, or to
	// nowhere, are refused the same way.
	for _, id := range []string{"escape", "dangling", "chain"} {
		if _, err := w.GetTask(ctx, id); !errors.Is(err, workspace.ErrUnsafe) || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("GetTask(%q) = %v, want a symlink refusal", id, err)
		}
	}
	if _, err := w.GetTask(ctx, "afile"); !errors.Is(err, workspace.ErrUnsafe) || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("GetTask(afile) = %v, want a refusal naming a file", err)
	}
	// The real task still works.
	if _, err := w.GetTask(ctx, "v1"); err != nil {
		t.Fatalf("GetTask(v1): %v", err)
	}
}

// TestServedTasksListRefusedLinks: the single writer's list holds the
// symlinks named by a task id beside the task directories, so the daemon
// refuses them at every rescan (status keeps naming them) rather than
// forgetting them; files, fifos, bad names and dot entries stay out.
func TestServedTasksListRefusedLinks(t *testing.T) {
	t.Parallel()
	w := taskTree(t)
	got, err := w.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alias", "chain", "creating", "dangling", "escape", "v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tasks = %q, want %q", got, want)
	}
}
