package bench

import (
	_ "embed"
	"os"
	"path/filepath"

	pyexample "github.com/workspaced/workspaced/examples/agents/python"
	"github.com/workspaced/workspaced/internal/python"
)

// pythonAgent is the driver of a Python agent process; it imports the
// example module workspace_agent.py, written beside it.
//
//go:embed python_agent.py
var pythonAgent []byte

// findPython returns the path of the interpreter python3 on PATH runs,
// or "" when it is not on PATH: the interpreter itself, past a version
// manager's shim (python.Find), for the harness starts 33 agents.
func findPython() string {
	p, err := python.Find()
	if err != nil {
		return ""
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
