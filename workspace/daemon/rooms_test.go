package daemon_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesStayShort keeps every file of the single writer's rooms (the
// daemon, the file store, the PostgreSQL store), tests included, at 500
// lines or fewer, so that each reads top to bottom as one phase.
func TestFilesStayShort(t *testing.T) {
	for _, dir := range []string{".", "../files", "../postgres"} {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("list the files of %s: %v (%d)", dir, err, len(names))
		}
		for _, n := range names {
			data, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			if lines := bytes.Count(data, []byte("\n")); lines > 500 {
				t.Errorf("%s has %d lines, more than 500: split it by phase", n, lines)
			}
		}
	}
}

// TestNoStoreImportsTheDaemon keeps the rooms apart: the daemon is above
// every store, and no code below it imports it.
func TestNoStoreImportsTheDaemon(t *testing.T) {
	for _, dir := range []string{"..", "../files", "../postgres", "../machine"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			data, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(`"github.com/workspaced/workspaced/workspace/daemon"`)) {
				t.Errorf("%s imports workspace/daemon: the daemon is above every store", n)
			}
		}
	}
}
