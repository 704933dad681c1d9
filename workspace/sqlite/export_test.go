package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// TestExport: the exported tree, opened as a file workspace, holds the
// same task, state, journal, backups (by the names backup list gives)
// and entries as the database; a directory that is not empty is refused.
func TestExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "'); DROP TABLE tasks; --"}); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for _, k := range []string{"k", "'); DROP TABLE entries; --", "ключ/..", ".hidden"} {
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: k, Description: "d", Value: json.RawMessage(`{"a":[1,2]}`), Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		for _, a := range []string{"w1", "w2"} {
			if _, err := s.WriteClaim(ctx, "t1", a, "s"+string(rune('1'+round))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "tree")
	rep, err := s.Export(ctx, dir)
	if err != nil || rep.Tasks != 1 || rep.Files < 8 {
		t.Fatalf("export: %+v, %v", rep, err)
	}
	w, err := files.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tree := w
	same := func(what string, a, b any, errA, errB error) {
		t.Helper()
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: database %+v (%v), tree %+v (%v)", what, a, errA, b, errB)
		}
	}
	ta, ea := s.GetTask(ctx, "t1")
	tb, eb := tree.GetTask(ctx, "t1")
	same("task", ta, tb, ea, eb)
	sa, ea := s.ReadState(ctx, "t1")
	sb, eb := tree.ReadState(ctx, "t1")
	same("state", sa, sb, ea, eb)
	ja, ea := s.ReadJournal(ctx, "t1")
	jb, eb := tree.ReadJournal(ctx, "t1")
	same("journal", ja, jb, ea, eb)
	ba, ea := s.ListBackups(ctx, "t1")
	bb, eb := tree.ListBackups(ctx, "t1")
	names := func(l []workspace.BackupInfo) []string {
		var n []string
		for _, b := range l {
			n = append(n, b.Name)
		}
		return n
	}
	same("backups", names(ba), names(bb), ea, eb)
	la, ea := s.ListEntries(ctx, sc)
	lb, eb := tree.ListEntries(ctx, sc)
	if len(la) != 4 {
		t.Errorf("%d entries in the database, want 4", len(la))
	}
	same("entries", len(la), len(lb), ea, eb)
	for _, it := range la {
		a, ea := s.GetEntry(ctx, sc, it.Key)
		b, eb := tree.GetEntry(ctx, sc, it.Key)
		same("entry "+it.Key, string(a.Value)+a.StoredBy+a.CreatedAt.String(), string(b.Value)+b.StoredBy+b.CreatedAt.String(), ea, eb)
	}
	if _, err := s.Export(ctx, dir); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("export into a directory that is not empty: %v, want ErrConflict", err)
	}
}
