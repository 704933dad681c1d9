package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// Python3 is the path of the interpreter that python3 on PATH runs, as
// the interpreter names itself (sys.executable), found once per test
// binary; an error when python3 is not on PATH. The tests start Python
// dozens of times, and python3 on PATH may be a version manager's shim
// (pyenv's is a shell script that runs pyenv) costing several times
// Python's own start-up each time: past it, the tests run the same
// interpreter at its own cost. Where python3 cannot name itself, it is
// python3 on PATH.
func Python3() (string, error) {
	pythonOnce.Do(func() { pythonPath, pythonErr = findPython3() })
	return pythonPath, pythonErr
}

// findPython3 is Python3 without the memory.
func findPython3() (string, error) {
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
