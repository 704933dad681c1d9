package clitest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace/tables"
)

// HistoryFiles reads every file of a directory tree that is history (no
// locks, no temporary files: what export and import carry), by slash
// path.
func HistoryFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && tables.NotHistory(d.Name()) {
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

// SameFiles fails t unless got holds exactly want's files, byte for
// byte; what names the two trees' relation.
func SameFiles(t testing.TB, what string, want, got map[string][]byte) {
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
