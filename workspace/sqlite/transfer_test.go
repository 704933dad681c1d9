package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// TestTransferKeepsEveryTime: an entry whose times are finer than the
// millisecond (written by hand, or by another tool) exports byte for
// byte after an import, and one to the millisecond, as workspaced
// writes them, is kept in the store's sortable form.
func TestTransferKeepsEveryTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	w, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	fine := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	ms := time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC)
	want := map[string][]byte{}
	for key, at := range map[string]time.Time{"fine": fine, "ms": ms} {
		data, err := atomicfile.Marshal(workspace.Entry{Key: key, ShortDescription: "d", StoredBy: "a", CreatedAt: at, UpdatedAt: at, Version: 1, Value: json.RawMessage(`{"a":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join("memory", "global", key+".json")
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[p] = data
	}
	s, _, err := Init(ctx, "sqlite:"+filepath.Join(t.TempDir(), "ws.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Import(ctx, dir, ImportOptions{}); err != nil {
		t.Fatalf("import: %v", err)
	}
	var stored string
	if err := s.DB().QueryRow("SELECT created_at FROM entries WHERE key = 'ms'").Scan(&stored); err != nil || stored != "2024-01-02T03:04:05.120Z" {
		t.Errorf("a time to the millisecond is kept as %q (%v), want 2024-01-02T03:04:05.120Z", stored, err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := s.Export(ctx, out); err != nil {
		t.Fatalf("export: %v", err)
	}
	for p, b := range want {
		got, err := os.ReadFile(filepath.Join(out, p))
		if err != nil || string(got) != string(b) {
			t.Errorf("%s after import and export:\n%s\nwant\n%s (%v)", p, got, b, err)
		}
	}
	if e, err := s.GetEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, "fine"); err != nil || !e.CreatedAt.Equal(fine) {
		t.Errorf("GetEntry of the imported entry: created %v, %v; want %v", e.CreatedAt, err, fine)
	}
}

// TestExportNamesBackupsAsListed: backups the daemon kept within one
// millisecond are exported under the names ListBackups gives them (a
// counter after the stamp), none overwriting another.
func TestExportNamesBackupsAsListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, err := Init(ctx, "sqlite:"+filepath.Join(t.TempDir(), "ws.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d", SubmittedBy: "human"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.DB().Exec("INSERT INTO backups (task_id, journal_seq, doc, saved_at) VALUES ('t1', $1, $2, '2024-01-02T03:04:05.120Z')",
			i, fmt.Sprintf(`{"journal_seq":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := s.ListBackups(ctx, "t1")
	if err != nil || len(listed) != 3 {
		t.Fatalf("ListBackups: %v %v", listed, err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := s.Export(ctx, out); err != nil {
		t.Fatalf("export: %v", err)
	}
	files, err := os.ReadDir(filepath.Join(out, "tasks", "t1", "backups"))
	if err != nil || len(files) != 3 {
		t.Fatalf("exported backups: %v %v, want 3", files, err)
	}
	for _, b := range listed {
		doc, err := s.ReadBackup(ctx, "t1", b.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, "tasks", "t1", "backups", b.Name))
		if err != nil || string(got) != string(doc) {
			t.Errorf("exported %s: %q %v, want %q", b.Name, got, err, doc)
		}
	}
}
