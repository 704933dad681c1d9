package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// stateURI is the resource holding a task's state.
func stateURI(task string) string { return uriPrefix + task + "/state" }

// envURI is the resource holding a task's env manifest.
func envURI(task string) string { return uriPrefix + task + "/env" }

// resources are the served task's own resources, listed for its session
// beside the templates that read any task's.
func (s *Server) resources() []*mcp.Resource {
	if s.task == "" {
		return nil
	}
	return []*mcp.Resource{
		{URI: stateURI(s.task), Name: "state", Title: "State of task " + s.task, MIMEType: "application/json",
			Description: "The task's execution state (state.json, written by the daemon): status, plan, subtasks with their workers, checkpoints."},
		{URI: envURI(s.task), Name: "env", Title: "Environment data of task " + s.task, MIMEType: "application/json",
			Description: "The manifest of the task's shared environment data: keys, descriptions, versions, sizes (no values)."},
	}
}

// readResource serves workspace://tasks/<task>/state and .../env as JSON.
// A failure is a JSON-RPC error with a code that says which kind it is
// (resourceError), never the bare code 0 of an unclassified error.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	task, what, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || (what != "state" && what != "env") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err := s.readable(req.Extra, task); err != nil {
		data, _ := json.Marshal(map[string]string{"uri": uri})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: ErrorText(err), Data: data}
	}
	var v any
	switch what {
	case "state":
		st, err := s.w.ReadState(ctx, task)
		if err != nil {
			return nil, resourceError(uri, stateError(task, err))
		}
		v = st
	case "env":
		items, err := s.w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: task})
		if err != nil {
			return nil, resourceError(uri, err)
		}
		v = items
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, resourceError(uri, fmt.Errorf("encode %s: %w", uri, err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}

// resourceError is a failed read as a JSON-RPC error: a resource that does
// not exist (a task without state yet, an unknown task) or a bad id has
// the invalid-params code the protocol gives a missing resource, anything
// else the internal-error code. The message is ErrorText's, and data names
// the resource.
func resourceError(uri string, err error) error {
	code := int64(jsonrpc.CodeInternalError)
	if errors.Is(err, workspace.ErrNotFound) || errors.Is(err, workspace.ErrInvalid) {
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: code, Message: ErrorText(err), Data: data}
}
