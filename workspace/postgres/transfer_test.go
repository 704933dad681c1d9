package postgres

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// historyDoc is a kept version of key k, version 1 of 2024-01-01, as the
// tree keeps it.
const historyDoc = "{\n  \"key\": \"k\",\n  \"short_description\": \"\",\n  \"stored_by\": \"a\",\n  \"created_at\": \"2024-01-01T00:00:00Z\",\n  \"updated_at\": \"2024-01-01T00:00:00Z\",\n  \"version\": 1,\n  \"value\": 1\n}\n"

// TestTransferRefusesBadTrees: a tree import cannot keep byte for byte is
// refused with a clear error, and nothing is written.
func TestTransferRefusesBadTrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, err := Init(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := func(t *testing.T) string {
		dir := t.TempDir()
		w, err := files.Init(dir, workspace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d", SubmittedBy: "human"}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return dir
	}
	write := func(t *testing.T, p, body string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		kind error
		want string
		mess func(t *testing.T, dir string)
	}{
		{"torn events line", workspace.ErrInvalid, "torn", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tasks/t1/events.log"), "2024-01-01T00:00:00Z task_created t1 by=human")
		}},
		{"bad event line", workspace.ErrInvalid, "line 1", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tasks/t1/events.log"), "'); DROP TABLE events; --\n")
		}},
		{"taken marker", workspace.ErrInvalid, "not a journal record", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tasks/t1/journal/000000000001.claim.a"), "{}")
		}},
		{"batch of the wrong size", workspace.ErrInvalid, "records", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tasks/t1/journal/000000000001-000000000003.json"), `{"records": []}`)
		}},
		{"entry not canonical", workspace.ErrInvalid, "canonical", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "memory/global/k.json"), `{"key":"k","short_description":"d","stored_by":"a","created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z","version":1,"value":1}`)
		}},
		{"kept version badly named", workspace.ErrInvalid, "not a kept version", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "memory/global/.history/k/v1.json"), "{}")
		}},
		{"kept version of another key", workspace.ErrInvalid, "its name says", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "memory/agents/a/.history/other/1704067200000-000001.json"), historyDoc)
		}},
		{"kept version named for another", workspace.ErrInvalid, "kept as 1704067200000-000001.json", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "memory/global/.history/k/1704067200000-000002.json"), historyDoc)
		}},
		{"symlink", workspace.ErrUnsafe, "symlink", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "tasks/t1/notes.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"NUL byte", workspace.ErrInvalid, "NUL", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tasks/t1/blob.bin"), "a\x00b")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := base(t)
			c.mess(t, dir)
			_, err := s.Import(ctx, dir, ImportOptions{})
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %v saying %q", err, c.kind, c.want)
			}
			var n int
			if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM tasks").Scan(&n); err != nil || n != 0 {
				t.Fatalf("after a refused import: %d tasks, %v", n, err)
			}
		})
	}
	if _, err := s.Import(ctx, t.TempDir(), ImportOptions{}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("import of an empty directory: got %v, want not found", err)
	}
}
