package service_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// TestExportImport: a tree loads into SQLite and exports back as the same
// history; the refusals keep their kinds (a directory that is no
// workspace, an export into a directory that is not empty).
func TestExportImport(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := root(t, service.Files)
	st, err := service.Open(ctx, src, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "moved"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	db := "sqlite:" + filepath.Join(t.TempDir(), "moved.db")
	in, err := service.Import(ctx, src, db, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Tasks != 1 || in.Where != "SQLite database "+db[len("sqlite:"):] {
		t.Errorf("Import = %+v, want 1 task into the SQLite database", in)
	}
	if _, err := service.Import(ctx, src, db, false); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("a second import without replace: %v, want a conflict", err)
	}

	out := filepath.Join(t.TempDir(), "back")
	ex, err := service.Export(ctx, db, out)
	if err != nil {
		t.Fatal(err)
	}
	if ex.FromTree || ex.Tasks != 1 || ex.Files == 0 {
		t.Errorf("Export from SQLite = %+v", ex)
	}
	want, err := os.ReadFile(filepath.Join(src, "tasks", "t1", "task.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "tasks", "t1", "task.json")); err != nil || string(got) != string(want) {
		t.Errorf("task.json exported back: %q, %v; want %q", got, err, want)
	}

	copied := filepath.Join(t.TempDir(), "copy")
	ex, err = service.Export(ctx, src, copied)
	if err != nil || !ex.FromTree || ex.Files == 0 {
		t.Fatalf("Export of a tree = %+v, %v", ex, err)
	}
	if _, err := service.Export(ctx, src, copied); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("export into a directory that is not empty: %v, want a conflict", err)
	}
	if _, err := service.Import(ctx, t.TempDir(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), false); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("import of a directory that is no workspace: %v, want not found", err)
	}
}
