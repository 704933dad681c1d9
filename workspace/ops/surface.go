package ops

import (
	"strconv"

	"github.com/workspaced/workspaced/workspace"
)

// Surface is the door an agent works through. What the workspace tells an
// agent to do — the preamble's pointer to the env data — names the calls
// of its door: a tool for an MCP agent, a command for one that runs the
// CLI, a route for a program of the HTTP API, a directory for one that
// reads the files.
type Surface string

// The surfaces.
const (
	SurfaceMCP   Surface = "mcp"
	SurfaceCLI   Surface = "cli"
	SurfaceHTTP  Surface = "http"
	SurfaceFiles Surface = "files"
)

// Surfaces are every surface, in the order they are listed to a user.
var Surfaces = []Surface{SurfaceCLI, SurfaceMCP, SurfaceHTTP, SurfaceFiles}

// ParseSurface reads a surface's name; "" is SurfaceMCP, the tools'.
func ParseSurface(s string) (Surface, error) {
	switch Surface(s) {
	case "":
		return SurfaceMCP, nil
	case SurfaceMCP, SurfaceCLI, SurfaceHTTP, SurfaceFiles:
		return Surface(s), nil
	}
	return "", workspace.Invalidf("surface "+strconv.Quote(s), "name the door the agent uses: cli, mcp, http or files", "unknown surface")
}

// EnvListCall is how an agent of surface s lists the env data of task.
func EnvListCall(s Surface, task string) string {
	switch s {
	case SurfaceCLI:
		return "run `workspaced env list --task " + task + "`"
	case SurfaceHTTP:
		return "GET /api/v1/tasks/" + task + "/env"
	case SurfaceFiles:
		return "read tasks/" + task + "/env/ (a JSON file a key, value last)"
	}
	return "call list_env_data()"
}

// envHint is the preamble's line pointing at the env data, in the calls
// of surface s (EnvHint for an MCP agent).
func envHint(s Surface, task string) string {
	if s == SurfaceMCP || s == "" {
		return EnvHint
	}
	return "Shared environment data is available — " + EnvListCall(s, task) + " to see what has been stored."
}
