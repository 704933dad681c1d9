package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace/postgres"
)

// historyFiles reads every file of a tree that is history (no locks, no
// temporary files), by slash path.
func historyFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && postgres.NotHistory(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = b
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	for p, b := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: lacks %s", what, p)
		} else if !bytes.Equal(g, b) {
			t.Errorf("%s: %s differs:\n--- want\n%s\n--- got\n%s", what, p, b, g)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: has %s, which the source has not", what, p)
		}
	}
}

// TestExportImportCLI: the demo's workspace on files → `workspaced
// import` into PostgreSQL → `workspaced export` gives the same files byte
// for byte; the imported workspace is then served by the PostgreSQL
// daemon and readable with the usual commands. Refusals exit as their
// help says.
func TestExportImportCLI(t *testing.T) {
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
	want := historyFiles(t, src)
	if len(want) < 50 {
		t.Fatalf("the demo's tree has %d files: too few to show anything", len(want))
	}
	sameFiles(t, "export of the import", want, historyFiles(t, out))

	// A file workspace exports as a copy of its history.
	copyDir := filepath.Join(w.Dir, "copy")
	if r := w.Run("export", "--from", src, "--to", copyDir); r.Code != 0 {
		t.Fatalf("export of a directory: %v", r)
	}
	sameFiles(t, "export of the file tree", want, historyFiles(t, copyDir))

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
