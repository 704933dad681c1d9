// Package python finds the Python interpreter that python3 on PATH runs.
package python

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Find is the path of the interpreter python3 on PATH runs, as the
// interpreter names itself (sys.executable); an error when python3 is
// not on PATH. python3 on PATH may be a version manager's shim (pyenv's
// is a shell script that runs pyenv) whose every start costs more than
// Python's own: a caller that starts Python many times finds it once
// and starts the interpreter itself, at its own cost. Where python3
// cannot name itself, it is python3 on PATH.
func Find() (string, error) {
	p, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("python3: %w", err)
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if exe := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(exe) {
		if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
			return exe, nil
		}
	}
	return p, nil
}
