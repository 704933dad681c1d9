package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestExportImportCLI: the demo's workspace on files → `workspaced
// import` into PostgreSQL → `workspaced export` gives the same files byte
// for byte; the imported workspace is then served by the PostgreSQL
// daemon and readable with the usual commands. Refusals exit as their
// help says.
func TestExportImportCLI(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	w := &ws{clitest.At(t, "")}
	src := filepath.Join(w.Dir, "run")
	if r := w.Run("demo", "--root", src, "--agents", "3", "--time-scale", "0.01"); r.Code != 0 {
		t.Fatalf("demo: %v", r)
	}
	r := w.Run("import", "--from", src, "--to", p.Root)
	if r.Code != 0 || !strings.Contains(r.Stdout, "imported 2 tasks") {
		t.Fatalf("import: %v", r)
	}
	out := filepath.Join(w.Dir, "out")
	if r := w.Run("--root", p.Root, "export", "--to", out); r.Code != 0 || !strings.Contains(r.Stdout, "exported 2 tasks") {
		t.Fatalf("export: %v", r)
	}
	want := clitest.HistoryFiles(t, src)
	if len(want) < 50 {
		t.Fatalf("the demo's tree has %d files: too few to show anything", len(want))
	}
	clitest.SameFiles(t, "export of the import", want, clitest.HistoryFiles(t, out))

	// A file workspace exports as a copy of its history.
	copyDir := filepath.Join(w.Dir, "copy")
	if r := w.Run("export", "--from", src, "--to", copyDir); r.Code != 0 {
		t.Fatalf("export of a directory: %v", r)
	}
	clitest.SameFiles(t, "export of the file tree", want, clitest.HistoryFiles(t, copyDir))

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", "--from", src, "--to", p.Root}, exitConflict, "--replace"},
		{[]string{"export", "--from", p.Root, "--to", out}, exitConflict, "not empty"},
		{[]string{"import", "--from", filepath.Join(w.Dir, "nothing"), "--to", p.Root}, exitNotFound, "--from ROOT"},
		{[]string{"import", "--from", src, "--to", filepath.Join(w.Dir, "x")}, exitUsage, "postgres://"},
		{[]string{"import", "--to", p.Root}, exitUsage, "--from ROOT is required"},
		{[]string{"export", "--from", p.Root}, exitUsage, "--to DIR is required"},
		{[]string{"export", "--from", filepath.Join(w.Dir, "nothing"), "--to", filepath.Join(w.Dir, "o2")}, exitNotFound, "init"},
	} {
		r := w.Run(c.args...)
		if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q in stderr:\n%s", c.args, r.Code, c.code, c.want, r.Stderr)
		}
	}
	if r := w.Run("import", "--from", src, "--to", p.Root, "--replace"); r.Code != 0 {
		t.Errorf("import --replace: %v", r)
	}
}
