package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	w := &ws{t: t, dir: t.TempDir(), env: cleanEnv()}
	src := filepath.Join(w.dir, "run")
	if r := w.run("demo", "--root", src, "--agents", "3", "--time-scale", "0.01"); r.code != 0 {
		t.Fatalf("demo: %v", r)
	}
	r := w.run("import", "--from", src, "--to", p.root)
	if r.code != 0 || !strings.Contains(r.stdout, "imported 2 tasks") {
		t.Fatalf("import: %v", r)
	}
	out := filepath.Join(w.dir, "out")
	if r := w.run("--root", p.root, "export", "--to", out); r.code != 0 || !strings.Contains(r.stdout, "exported 2 tasks") {
		t.Fatalf("export: %v", r)
	}
	want := historyFiles(t, src)
	if len(want) < 50 {
		t.Fatalf("the demo's tree has %d files: too few to show anything", len(want))
	}
	sameFiles(t, "export of the import", want, historyFiles(t, out))

	// A file workspace exports as a copy of its history.
	copyDir := filepath.Join(w.dir, "copy")
	if r := w.run("export", "--from", src, "--to", copyDir); r.code != 0 {
		t.Fatalf("export of a directory: %v", r)
	}
	sameFiles(t, "export of the file tree", want, historyFiles(t, copyDir))

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", "--from", src, "--to", p.root}, exitConflict, "--replace"},
		{[]string{"export", "--from", p.root, "--to", out}, exitConflict, "not empty"},
		{[]string{"import", "--from", filepath.Join(w.dir, "nothing"), "--to", p.root}, exitNotFound, "--from ROOT"},
		{[]string{"import", "--from", src, "--to", filepath.Join(w.dir, "x")}, exitUsage, "postgres://"},
		{[]string{"import", "--to", p.root}, exitUsage, "--from ROOT is required"},
		{[]string{"export", "--from", p.root}, exitUsage, "--to DIR is required"},
		{[]string{"export", "--from", filepath.Join(w.dir, "nothing"), "--to", filepath.Join(w.dir, "o2")}, exitNotFound, "init"},
	} {
		r := w.run(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q in stderr:\n%s", c.args, r.code, c.code, c.want, r.stderr)
		}
	}
	if r := w.run("import", "--from", src, "--to", p.root, "--replace"); r.code != 0 {
		t.Errorf("import --replace: %v", r)
	}
}
