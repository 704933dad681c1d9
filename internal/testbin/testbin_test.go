package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestPathOncePerRun: the binary is built into the directory of the go
// command that runs the tests, runs, and a second look gives the same
// path; a directory left by a run whose go command is gone is removed,
// one of a live run is not.
func TestPathOncePerRun(t *testing.T) {
	base := filepath.Join(os.TempDir(), "workspaced-testbin-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	// A process that has exited: its pid names a finished run.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, strconv.Itoa(dead.Process.Pid))
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	p := Must(t)
	if want := filepath.Join(base, strconv.Itoa(os.Getppid()), "workspaced"); p != want {
		t.Errorf("built at %s, want %s", p, want)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "workspaced") {
		t.Errorf("workspaced version: %v\n%s", err, out)
	}
	if again := Must(t); again != p {
		t.Errorf("second Path %s, first %s", again, p)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the directory of a finished run is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		t.Errorf("the directory of this run is gone: %v", err)
	}
}
