package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/optdep"
	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestFindPastShim: a python3 on PATH that is a shim (a script that
// runs the interpreter, as pyenv's does) runs once, to name the
// interpreter; Find gives that interpreter, not the shim.
func TestFindPastShim(t *testing.T) {
	real, err := exec.LookPath("python3")
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: no shim can run it")
	}
	shims := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	shim := "#!/bin/sh\necho run >>" + runs + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "python3"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	py, err := Find()
	if err != nil || py == filepath.Join(shims, "python3") {
		t.Fatalf("Find = %q, %v; want the interpreter behind the shim", py, err)
	}
	if out, err := exec.Command(py, "-c", "print(6*7)").Output(); err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("%s: %v %q", py, err, out)
	}
	if b, _ := os.ReadFile(runs); string(b) != "run\n" {
		t.Errorf("the shim ran %q, want once, to name the interpreter", b)
	}
	// Without python3 on PATH, an error naming it.
	t.Setenv("PATH", t.TempDir())
	if py, err := Find(); err == nil || !strings.Contains(err.Error(), "python3") {
		t.Errorf("Find without python3 on PATH = %q, %v; want an error naming it", py, err)
	}
}
