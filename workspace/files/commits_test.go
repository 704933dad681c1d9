package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// TestCommitsHearsStateWrites: a waiter of Commits hears each state.json
// renamed into its task's directory, as the daemon writes it; a task id
// that is not one, or a task with no directory, is an error (Wait then
// polls).
func TestCommitsHearsStateWrites(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s := New(ws)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := ws.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "heard"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Commits(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	await := func(what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(time.Minute):
			t.Fatalf("%s: nothing heard within a minute", what)
		}
	}
	await("the start")
	root, err := os.OpenRoot(filepath.Join(dir, "tasks", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for i := range 5 {
		if err := atomicfile.WriteFile(root, "state.json", []byte(`{"n":`+string(rune('0'+i))+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		await("state.json written")
	}
	for _, id := range []string{"../t1", "no_such_task"} {
		if _, err := s.Commits(ctx, id); err == nil {
			t.Errorf("Commits of %q: no error", id)
		}
	}
}
