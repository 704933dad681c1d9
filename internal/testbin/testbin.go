// Package testbin builds the workspaced binary for the tests that start
// it as a process: once per `go test` run, the first time a test asks.
// The test binaries of one run are children of the same go command, so
// they share a directory named by its process id; the first to ask
// builds into it under a lock while the others wait, and each after it
// finds the binary up to date (`go build -o` does not link again an
// output whose build id matches). A run's directory stays until a later
// run finds its go command gone and removes it. A package whose tests
// never ask does not build it.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/gofrs/flock"
)

// Package is the import path of the command built.
const Package = "github.com/workspaced/workspaced/cmd/workspaced"

var (
	once sync.Once
	path string
	err  error
)

// Path builds the binary on first use and returns its path, or why it
// could not be built. It is safe for concurrent use, from one test binary
// or from several of the same run.
func Path() (string, error) {
	once.Do(func() { path, err = build() })
	return path, err
}

// build builds the binary into the directory of this run, under its lock.
func build() (string, error) {
	base := filepath.Join(os.TempDir(), "workspaced-testbin-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("build workspaced: %w", err)
	}
	removeStale(base)
	run := strconv.Itoa(os.Getppid())
	lock := flock.New(filepath.Join(base, run+".lock"))
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("build workspaced: lock %s: %w", lock.Path(), err)
	}
	defer lock.Unlock()
	p := filepath.Join(base, run, "workspaced")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("build workspaced: %w", err)
	}
	out, err := exec.Command("go", "build", "-o", p, Package).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build workspaced: %v\n%s", err, out)
	}
	return p, nil
}

// removeStale removes the directories, and their locks, of runs whose go
// command has exited. A lock held is a build under way: left alone.
func removeStale(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() || alive(pid) {
			continue
		}
		lock := flock.New(filepath.Join(base, e.Name()+".lock"))
		if ok, err := lock.TryLock(); err != nil || !ok {
			continue
		}
		_ = os.RemoveAll(filepath.Join(base, e.Name()))
		_ = os.Remove(lock.Path())
		_ = lock.Unlock()
	}
}

// alive reports whether a process pid exists.
func alive(pid int) bool {
	if pid <= 1 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
