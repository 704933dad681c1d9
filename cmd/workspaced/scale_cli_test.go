package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// listTree is a workspace of six tasks with states (three executing, three
// completed), then bent: an unreadable task.json, an invalid state, a
// missing state, two tasks created at the same instant, a directory
// without task.json and a symlinked task directory.
func listTree(t *testing.T) *ws {
	t.Helper()
	w := &ws{clitest.NewScale(t, 3, 3)}
	tasks := filepath.Join(w.Root, "tasks")
	task2, err := os.ReadFile(filepath.Join(tasks, "task_00002", "task.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return os.WriteFile(filepath.Join(tasks, "task_00004", "task.json"), []byte("{"), 0o644) },
		func() error {
			return os.WriteFile(filepath.Join(tasks, "task_00001", "state.json"), []byte("{}"), 0o644)
		},
		func() error { return os.Remove(filepath.Join(tasks, "task_00003", "state.json")) },
		func() error {
			same := strings.ReplaceAll(string(task2), "task_00002", "task_00005")
			return os.WriteFile(filepath.Join(tasks, "task_00005", "task.json"), []byte(same), 0o644)
		},
		func() error { return os.Mkdir(filepath.Join(tasks, "creating"), 0o755) },
		func() error { return os.Symlink("task_00000", filepath.Join(tasks, "alias")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestTaskListOrderAndRows: task list streams the tasks in created_at
// order (ties by id, unreadable ones first), with the status of each, and
// warns about what tasks/ holds that is no task.
func TestTaskListOrderAndRows(t *testing.T) {
	t.Parallel()
	w := listTree(t)
	r := w.Run("task", "list", "--json")
	if r.Code != 0 || !strings.Contains(r.Stderr, "workspaced: warning: skipped tasks/alias: is a symlink") {
		t.Fatalf("task list --json:\n%v", r)
	}
	var rows []taskRow
	clitest.Decode(t, r.Stdout, &rows)
	want := []struct{ id, status string }{
		{"task_00004", "unreadable"}, {"task_00000", "executing"}, {"task_00001", "new"},
		{"task_00002", "executing"}, {"task_00005", "completed"}, {"task_00003", "new"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), r.Stdout)
	}
	for i, wr := range want {
		if rows[i].ID != wr.id || rows[i].Status != wr.status {
			t.Errorf("row %d: %s %s, want %s %s", i, rows[i].ID, rows[i].Status, wr.id, wr.status)
		}
	}
	if rows[0].Error == "" || rows[2].Error == "" || rows[3].Error != "" || rows[1].Phase != "work_in_progress" {
		t.Errorf("errors and phases: %+v", rows)
	}
	var buf bytes.Buffer
	if err := printJSON(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if buf.String() != r.Stdout {
		t.Errorf("streamed JSON differs from the rows encoded whole:\n%s\nwhole:\n%s", r.Stdout, buf.String())
	}

	text := w.Run("task", "list")
	lines := strings.Split(strings.TrimSuffix(text.Stdout, "\n"), "\n")
	if text.Code != 0 || len(lines) != 1+len(want) || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("task list:\n%v", text)
	}
	for i, wr := range want {
		if f := strings.Fields(lines[1+i]); f[0] != wr.id || f[1] != wr.status {
			t.Errorf("line %d = %q, want %s %s", 1+i, lines[1+i], wr.id, wr.status)
		}
	}
}

// TestTaskListOverAnyStore: over a store that is not a tree (the tree
// seen only through workspace.Store) task list prints the same rows in
// the same order; only the tree's warnings about tasks/ are left out, and
// a broken state's error says what the full check found where the tree
// names what its head lacks.
func TestTaskListOverAnyStore(t *testing.T) {
	t.Parallel()
	w := listTree(t)
	tree := w.Run("task", "list", "--json")
	if tree.Code != 0 {
		t.Fatalf("task list --json:\n%v", tree)
	}
	fs, err := files.Open(w.Root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var out, errs bytes.Buffer
	if err := printTaskList(context.Background(), &env{stdout: &out, stderr: &errs}, struct{ workspace.Store }{fs}, true); err != nil {
		t.Fatal(err)
	}
	var overStore, overTree []taskRow
	clitest.Decode(t, out.String(), &overStore)
	clitest.Decode(t, tree.Stdout, &overTree)
	if !reflect.DeepEqual(overStore, overTree) {
		t.Errorf("over the Store:\n%s\nover the tree:\n%s", out.String(), tree.Stdout)
	}
	if errs.Len() != 0 {
		t.Errorf("over the Store it warned: %s", errs.String())
	}
}

// TestStatusJSONStreamed: status --json prints its rows one by one, byte
// for byte as the whole report encoded at once.
func TestStatusJSONStreamed(t *testing.T) {
	t.Parallel()
	w := listTree(t)
	got := w.Ok("status", "--json")
	ws, err := files.Open(w.Root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s, err := files.ReadStatus(t.Context(), ws)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := printJSON(&want, s); err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Fatalf("status --json:\n%s\nthe report encoded whole:\n%s", got, want.String())
	}
	if len(s.Tasks) != 7 || s.ByStatus["invalid"] != 1 || s.ByStatus["none"] != 2 || s.ByStatus["executing"] != 2 || s.ByStatus["completed"] != 2 ||
		len(s.Skipped) != 1 || s.Skipped[0].File != "tasks/alias" {
		t.Fatalf("status: %+v", s)
	}
	// An empty workspace: "tasks": [] as before.
	e := newWS(t)
	if out := e.Ok("status", "--json"); !strings.Contains(out, "\n  \"tasks\": []\n}\n") {
		t.Fatalf("status --json of an empty workspace:\n%s", out)
	}
}
