package bench

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	pyexample "github.com/workspaced/workspaced/examples/agents/python"
)

// pythonAgent is the driver of a Python agent process; it imports the
// example module workspace_agent.py, written beside it.
//
//go:embed python_agent.py
var pythonAgent []byte

// findPython returns the path of the interpreter python3 on PATH runs,
// or "" when it is not on PATH. The interpreter itself, as it names it
// (sys.executable), not python3 on PATH: a version manager's shim there
// (pyenv's is a shell script that runs pyenv) costs more at each start
// than Python does, and the harness starts 33 agents; the shim then runs
// once, here. Where python3 cannot name itself, it is python3 on PATH.
func findPython() string {
	p, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if exe := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(exe) {
		if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
			return exe
		}
	}
	return p
}

// writePythonAgent writes the driver and the example module into dir and
// returns the driver's path.
func writePythonAgent(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace_agent.py"), pyexample.WorkspaceAgent, 0o644); err != nil {
		return "", err
	}
	driver := filepath.Join(dir, "python_agent.py")
	if err := os.WriteFile(driver, pythonAgent, 0o644); err != nil {
		return "", err
	}
	return driver, nil
}
