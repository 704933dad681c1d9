package files_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// tree is every file of dir with its bytes, for telling whether a refused
// write changed anything. A lock file counts by its existence: taking a
// lock rewrites its holder record.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %s", rel, d.Type())
		if d.Type().IsRegular() && filepath.Base(filepath.Dir(p)) != ".locks" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", data)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBadInput holds the file tree to the bad and odd input tables every
// store meets, looking at every file of the tree after each refusal.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	storetest.BadInput(t, s, func(t *testing.T) string { return tree(t, dir) })
}
