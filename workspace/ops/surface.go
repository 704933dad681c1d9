package ops

import (
	"strconv"
	"strings"

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
	call := invite(s, Call(s, "list_env_data", task, ""))
	if s == SurfaceFiles {
		call += " (a JSON file a key, value last)"
	}
	return call
}

// invite is call as an agent of surface s is told to make it: run a
// command, call a tool, read a path, or the route as it is.
func invite(s Surface, call string) string {
	switch {
	case strings.HasPrefix(call, "workspaced "):
		return "run `" + call + "`"
	case s == SurfaceHTTP:
		return call
	case s == SurfaceFiles:
		return "read " + call
	}
	return "call " + call + "()"
}

// envHint is the preamble's line pointing at the env data, in the calls
// of surface s (EnvHint for an MCP agent).
func envHint(s Surface, task string) string {
	if s == SurfaceMCP || s == "" {
		return EnvHint
	}
	return "Shared environment data is available — " + EnvListCall(s, task) + " to see what has been stored."
}

// doorCall is one universal capability in the calls of each door: the MCP
// tool (its name in UniversalCapabilities), the CLI command, the HTTP
// route and, for a read the tree answers, the path of the files. T stands
// for the task (filled in when it is known); "" is a door without that
// call, whose agent is not told of it. A files agent writes through the
// CLI, so its missing entries are the CLI's.
type doorCall struct {
	tool, cli, http, files string
}

// doorCalls is the one table of the calls each door names: the system
// context lists them, the preamble points at list_env_data's.
var doorCalls = []doorCall{
	{"store_env_data", "workspaced env store --task {T} --key K --value JSON", "PUT /api/v1/tasks/{T}/env/K", ""},
	{"get_env_data", "workspaced env get --task {T} --key K", "GET /api/v1/tasks/{T}/env/K", "tasks/{T}/env/K.json"},
	{"list_env_data", "workspaced env list --task {T}", "GET /api/v1/tasks/{T}/env", "tasks/{T}/env/"},
	{"update_env_data", "workspaced env update --task {T} --key K", "PUT /api/v1/tasks/{T}/env/K with If-Match", ""},
	{"delete_env_data", "workspaced env delete --task {T} --key K", "DELETE /api/v1/tasks/{T}/env/K", ""},
	{"store_memory", "workspaced memory store --scope agent --agent {A} --key K --value JSON", "PUT /api/v1/memory/agents/{A}/K", ""},
	{"get_memory", "workspaced memory get --scope agent --agent {A} --key K", "GET /api/v1/memory/agents/{A}/K", "memory/agents/{A}/K.json"},
	{"list_memory", "workspaced memory list --scope agent --agent {A}", "GET /api/v1/memory/agents/{A}", "memory/agents/{A}/"},
	{"delete_memory", "workspaced memory delete --scope agent --agent {A} --key K", "DELETE /api/v1/memory/agents/{A}/K", ""},
	{"get_memory_history", "workspaced memory history --scope agent --agent {A} --key K", "GET /api/v1/memory/agents/{A}/K/history", ""},
	{"put_memory_item", "workspaced memory put --namespace a/b --key K --value JSON", "PUT /api/v1/memory/items", ""},
	{"get_memory_item", "workspaced memory get --namespace a/b --key K", "GET /api/v1/memory/items", ""},
	{"delete_memory_item", "workspaced memory delete --namespace a/b --key K", "DELETE /api/v1/memory/items", ""},
	{"search_memory", "workspaced memory search --namespace a/b", "POST /api/v1/memory/search", ""},
	{"list_memory_namespaces", "workspaced memory namespaces", "POST /api/v1/memory/namespaces", ""},
	{"get_task", "workspaced task show --task {T}", "GET /api/v1/tasks/{T}", "tasks/{T}/task.json"},
	{"get_task_state", "workspaced state show --task {T}", "GET /api/v1/tasks/{T}", "tasks/{T}/state.json"},
	{"get_plan", "", "GET /api/v1/tasks/{T}/plan", "tasks/{T}/plan.json"},
	{"get_subtask", "workspaced state show --task {T}", "GET /api/v1/tasks/{T}/plan", "tasks/{T}/plan.json"},
	{"get_output", "", "GET /api/v1/tasks/{T}/outputs/S", "tasks/{T}/outputs/S.json"},
	{"list_reviews", "", "", "tasks/{T}/reviews/"},
	{"get_review", "", "GET /api/v1/tasks/{T}/reviews/R", "tasks/{T}/reviews/R.json"},
	{"write_plan", "workspaced plan write --task {T} --file F --agent {A} --propose", "POST /api/v1/tasks/{T}/plan?propose=true", ""},
	{"amend_plan", "workspaced plan amend --task {T}", "POST /api/v1/tasks/{T}/plan/amendments", ""},
	{"write_review", "workspaced review write --task {T} --id R --file F --agent {A} --done", "PUT /api/v1/tasks/{T}/reviews/R?done=true", ""},
	{"claim_subtask", "workspaced claim --task {T} --agent {A} --subtask S", "POST /api/v1/tasks/{T}/claims", ""},
	{"signal_done", "workspaced done --task {T} --agent {A} --subtask S --output PATH", "POST /api/v1/tasks/{T}/done", ""},
	{"get_delegation_context", "workspaced preamble --thread X", "GET /api/v1/threads/X/preamble", "workspaced preamble --thread X --for files"},
	{"list_capabilities", "workspaced system-context --agent {A}", "GET /api/v1/agent/system-context", "workspaced system-context --agent {A} --for files"},
	{"skills", "workspaced skill list", "", "skills/"},
	{"list_tasks", "workspaced task list", "GET /api/v1/tasks", "tasks/"},
	{"create_task", "workspaced task create --description TEXT", "POST /api/v1/tasks", ""},
	{"get_context", "workspaced context --thread X", "GET /api/v1/threads/X/context", ""},
}

// Call is the call of the universal capability tool (an MCP tool name)
// on surface s, with the task and the agent filled in where known (else
// T and A stand for them); "" when the door has no such call.
func Call(s Surface, tool, task, agent string) string {
	for _, c := range doorCalls {
		if c.tool != tool {
			continue
		}
		call := c.tool
		switch s {
		case SurfaceCLI:
			call = c.cli
		case SurfaceHTTP:
			call = c.http
		case SurfaceFiles:
			if call = c.files; call == "" {
				call = c.cli
			}
		}
		if task == "" {
			task = "T"
		}
		if agent == "" {
			agent = "A"
		}
		return strings.NewReplacer("{T}", task, "{A}", agent).Replace(call)
	}
	return ""
}
