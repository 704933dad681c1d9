package clitest

import (
	"sync"

	"github.com/workspaced/workspaced/internal/python"
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
	pythonOnce.Do(func() { pythonPath, pythonErr = python.Find() })
	return pythonPath, pythonErr
}
