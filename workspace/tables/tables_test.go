package tables

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

func TestTimeScans(t *testing.T) {
	want := time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC)
	for _, c := range []struct {
		name string
		src  any
		ok   bool
	}{
		{"time.Time in another zone", want.In(time.FixedZone("x", 3600)), true},
		{"the SQLite store's text", "2024-01-02T03:04:05.120Z", true},
		{"RFC 3339 as JSON writes it", "2024-01-02T03:04:05.12Z", true},
		{"bytes", []byte("2024-01-02T03:04:05.120Z"), true},
		{"not a time", "yesterday", false},
		{"a number", int64(7), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got time.Time
			err := Time{&got}.Scan(c.src)
			if (err == nil) != c.ok {
				t.Fatalf("Scan(%v): %v, want ok=%v", c.src, err, c.ok)
			}
			if c.ok && (!got.Equal(want) || got.Location() != time.UTC) {
				t.Fatalf("Scan(%v) = %v, want %v in UTC", c.src, got, want)
			}
		})
	}
}

func TestNotHistory(t *testing.T) {
	for name, want := range map[string]bool{
		".locks": true, ".workspaced.lock": true, "state.json.tmp-123": true, ".tmp-x": true,
		"state.json": false, ".claim.a.x": false, ".done.a.x": false, "events.log": false, "plan.json": false,
	} {
		if got := NotHistory(name); got != want {
			t.Errorf("NotHistory(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestReadTreeOrdersTasksFirst: every row that refers to a task comes
// after every task row, whatever the walk met first.
func TestReadTreeOrdersTasksFirst(t *testing.T) {
	dir := t.TempDir()
	w, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := w.CreateTask(context.Background(), workspace.NewTaskRequest{ID: id, Description: "d", SubmittedBy: "human"}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := os.WriteFile(filepath.Join(dir, "tasks", "a", "notes.txt"), []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load, err := ReadTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if load.Tasks != 2 {
		t.Fatalf("read %d tasks, want 2", load.Tasks)
	}
	lastTask, firstRef := -1, len(load.Rows)
	for i, r := range load.Rows {
		switch {
		case strings.HasPrefix(r.SQL, "INSERT INTO tasks "):
			lastTask = i
		case strings.Contains(r.SQL, "task_id"):
			firstRef = min(firstRef, i)
		}
	}
	if lastTask < 0 || firstRef == len(load.Rows) || lastTask > firstRef {
		t.Fatalf("task rows end at %d, rows referring to tasks begin at %d", lastTask, firstRef)
	}
}
