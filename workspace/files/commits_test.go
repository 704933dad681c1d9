package files_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestCommitsHearsStateWrites: waiters of Commits hear each state.json
// renamed into their task's directory, as the daemon writes it, through
// one watch that ends with the last waiter; a task id that is not one,
// or a task with no directory, is an error (Wait then polls).
func TestCommitsHearsStateWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s := ws
	if _, err := ws.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "heard"}); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(filepath.Join(dir, "tasks", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	storetest.Commits(t, s, "t1", func(i int) {
		if err := atomicfile.WriteFile(root, "state.json", []byte(`{"n":`+strconv.Itoa(i)+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}, s.CommitWaiters)
	for _, id := range []string{"../t1", "no_such_task"} {
		if _, err := s.Commits(t.Context(), id); err == nil {
			t.Errorf("Commits of %q: no error", id)
		}
	}
}
