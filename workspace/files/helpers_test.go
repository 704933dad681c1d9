package files

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var t0 = time.Date(2024, 1, 15, 10, 0, 0, 123_000_000, time.UTC)

// newWS makes a fresh workspace under t.TempDir() with a fixed clock.
func newWS(t testing.TB) (*Store, *clock) {
	t.Helper()
	c := &clock{t: t0}
	w, err := Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{Now: c.now})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, c
}

// newTask creates a task with the given id.
func newTask(t testing.TB, w *Store, id string) {
	t.Helper()
	if _, err := w.CreateTask(context.Background(), workspace.NewTaskRequest{ID: id, Description: "task " + id}); err != nil {
		t.Fatalf("CreateTask %s: %v", id, err)
	}
}

// listing is a recursive listing of dir: every path with its type, size,
// contents (a file over 4 KiB by its SHA-256) and (for symlinks) target,
// one per line, sorted.
func listing(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s", rel, info.Mode().Type())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular() && filepath.Base(filepath.Dir(p)) == ".locks":
			// Taking a lock rewrites its holder record; the lock file
			// existing is what counts.
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(data) <= 4<<10 {
				line += fmt.Sprintf(" %d %x", info.Size(), data)
			} else {
				// A big file by its digest: writing out all its bytes in
				// hex, twice a refusal, was most of a test's time.
				line += fmt.Sprintf(" %d sha256:%x", info.Size(), sha256.Sum256(data))
			}
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
