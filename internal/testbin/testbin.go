// Package testbin builds the workspaced binary for the tests that start
// it as a process: once per test binary, the first time a test asks, into
// a temporary directory that Remove deletes after the tests. A package
// whose tests never ask does not build it.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Package is the import path of the command built.
const Package = "github.com/workspaced/workspaced/cmd/workspaced"

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Path builds the binary on first use and returns its path, or why it
// could not be built. It is safe for concurrent use.
func Path() (string, error) {
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "workspaced-testbin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "workspaced")
		out, berr := exec.Command("go", "build", "-o", path, Package).CombinedOutput()
		if berr != nil {
			err = fmt.Errorf("build workspaced: %v\n%s", berr, out)
		}
	})
	return path, err
}

// Must is Path that fails t when the binary cannot be built.
func Must(t testing.TB) string {
	t.Helper()
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Remove deletes the binary and its directory, if it was built; call it
// from TestMain after the tests have run.
func Remove() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
