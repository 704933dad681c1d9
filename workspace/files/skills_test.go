package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// gridsSkill is a valid skill.
const gridsSkill = "---\ndescription: Reading ARC grids: rows, columns, colours 0-9\ntags: [grids, arc]\nmodes: [analysis]\n---\n# Grids\n\nRead row by row.\n"

func writeSkill(t testing.TB, w *Store, name, text string) {
	t.Helper()
	dir := filepath.Join(w.Dir(), workspace.SkillsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSkillStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	if s, r, err := w.ListSkills(ctx); err != nil || len(s) != 0 || len(r) != 0 {
		t.Fatalf("no skills/: %v %v %v", s, r, err)
	}
	if _, err := w.GetSkill(ctx, "grids"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("get before add: %v", err)
	}
	s, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: "grids", Data: []byte(gridsSkill)})
	if err != nil || s.Name != "grids" || s.Description == "" {
		t.Fatalf("add: %+v %v", s, err)
	}
	if _, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: "grids", Data: []byte(gridsSkill)}); !errors.Is(err, workspace.ErrConflict) {
		t.Fatalf("add twice: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(w.Dir(), "skills", "grids.md"))
	if _, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: "grids", Data: []byte("no front matter"), Replace: true}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("replace with a broken skill: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(w.Dir(), "skills", "grids.md"))
	if !bytes.Equal(before, after) {
		t.Fatal("a refused skill changed the file")
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "bad name"} {
		if _, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: bad, Data: []byte(gridsSkill)}); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("add %q: %v", bad, err)
		}
	}
	replaced := strings.Replace(gridsSkill, "Read row by row.", "Read column by column.", 1)
	if _, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: "grids", Data: []byte(replaced), Replace: true}); err != nil {
		t.Fatal(err)
	}
	got, err := w.GetSkill(ctx, "grids")
	if err != nil || !strings.Contains(got.Body, "column by column") || got.Size != int64(len(replaced)) {
		t.Fatalf("get: %+v %v", got, err)
	}
	writeSkill(t, w, "broken", "---\n")
	list, refused, err := w.ListSkills(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "grids" || list[0].Body != "" || len(refused) != 1 || refused[0].File != "skills/broken.md" {
		t.Fatalf("list: %+v %+v %v", list, refused, err)
	}
	if _, err := w.GetSkill(ctx, "broken"); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("get broken: %v", err)
	}
	if err := w.RemoveSkill(ctx, "grids", "test"); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveSkill(ctx, "grids", "test"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "skills", "grids.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
}
