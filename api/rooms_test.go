package api

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoStore keeps the API a door: transport over the operations
// layer, importing no store, driver or the daemon.
func TestImportsNoStore(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil || len(names) == 0 {
		t.Fatalf("list the package's files: %v", err)
	}
	banned := []string{"/workspace/files", "/workspace/sqlstore", "/workspace/sqlite", "/workspace/postgres", "/workspace/daemon", "/workspace/machine"}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), n, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range banned {
				if strings.HasSuffix(p, b) || strings.Contains(p, b+"/") {
					t.Errorf("%s imports %s: the API is a door over service, never over a store", n, p)
				}
			}
		}
	}
}
