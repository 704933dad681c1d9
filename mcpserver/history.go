package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
)

// ToolGetMemoryHistory reads the kept versions of a memory entry: the
// tool of `workspaced memory history` and GET …/{key}/history.
const ToolGetMemoryHistory = "get_memory_history"

const descMemoryHistory = "Earlier versions of a memory key, oldest first, each with its author."

// memoryHistoryInput names a key of the scopes that keep their history:
// a session's memory keeps none.
type memoryHistoryInput struct {
	Key   string `json:"key"`
	Scope string `json:"scope,omitempty" enum:"agent,global" jsonschema:"Default agent."`
}

var outVersions = &schema{Type: "object", Required: []string{"versions"}}

func historyTool() *toolDef {
	return define(ToolGetMemoryHistory, descMemoryHistory, annRead, outVersions, under("versions", (*Server).memoryHistory))
}

// memoryHistory answers the kept versions, oldest first; a key never
// replaced has none ([]), whether it exists or not.
func (s *Server) memoryHistory(ctx context.Context, _ *mcp.CallToolRequest, in memoryHistoryInput) (string, error) {
	sc, _, err := s.memoryScope(in.Scope)
	if err != nil {
		return "", err
	}
	versions, err := service.EntryHistory(ctx, s.w, sc, in.Key)
	if err != nil {
		return "", err
	}
	return toJSON(versions)
}
