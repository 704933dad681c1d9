package workspace_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// fixtureNow is the clock of the trees the Ops tests write.
var fixtureNow = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// gridsSkill is a valid skill.
const gridsSkill = "---\ndescription: Reading ARC grids: rows, columns, colours 0-9\ntags: [grids, arc]\nmodes: [analysis]\n---\n# Grids\n\nRead row by row.\n"

func writeSkill(t testing.TB, w *files.Store, name, text string) {
	t.Helper()
	dir := filepath.Join(w.Dir(), workspace.SkillsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
