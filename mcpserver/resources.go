package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/workspace"
)

// Resource URI templates: any task's state and env manifest. The served
// task's two resources are also listed as concrete resources.
const (
	StateURITemplate = "workspace://tasks/{task}/state"
	EnvURITemplate   = "workspace://tasks/{task}/env"
)

const uriPrefix = "workspace://tasks/"

func (s *Server) addResources() {
	s.mcp.AddResource(&mcp.Resource{URI: stateURI(s.task), Name: "state", Title: "State of task " + s.task,
		Description: "The task's execution state (state.json, written by the daemon): status, plan, subtasks with their workers, checkpoints.",
		MIMEType:    "application/json"}, s.readResource)
	s.mcp.AddResource(&mcp.Resource{URI: envURI(s.task), Name: "env", Title: "Environment data of task " + s.task,
		Description: "The manifest of the task's shared environment data: keys, descriptions, versions, sizes (no values).",
		MIMEType:    "application/json"}, s.readResource)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: StateURITemplate, Name: "task-state",
		Description: "Any task's execution state (state.json).", MIMEType: "application/json"}, s.readResource)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: EnvURITemplate, Name: "task-env",
		Description: "Any task's environment data manifest.", MIMEType: "application/json"}, s.readResource)
}

// readResource serves workspace://tasks/<task>/state and .../env as JSON.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	task, what, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || (what != "state" && what != "env") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var v any
	switch what {
	case "state":
		st, err := s.w.ReadState(task)
		if err != nil {
			return nil, fmt.Errorf("%s", ErrorText(err))
		}
		v = st
	case "env":
		items, err := s.w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: task})
		if err != nil {
			return nil, fmt.Errorf("%s", ErrorText(err))
		}
		v = items
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
