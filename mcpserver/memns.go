package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// The tools of namespaced memory: items under a namespace of labels,
// every agent's alike, so a token reaches them with its global memory
// access (permit: read to get, search and list; write to put and
// delete).
const (
	ToolPutMemoryItem    = "put_memory_item"
	ToolGetMemoryItem    = "get_memory_item"
	ToolDeleteMemoryItem = "delete_memory_item"
	ToolSearchMemory     = "search_memory"
	ToolMemoryNamespaces = "list_memory_namespaces"
)

const (
	descPutItem    = "Store a JSON object under a namespace (labels) and key in memory all agents share."
	descGetItem    = "Read one item of namespaced memory."
	descDeleteItem = "Remove one item of namespaced memory."
	descSearch     = "List namespaced memory items under a prefix, filtered on value fields ($eq $ne $gt $gte $lt $lte)."
	descNamespaces = "List the namespaces of namespaced memory (\"*\" matches any label)."
)

type putItemInput struct {
	Namespace  []string  `json:"namespace"`
	Key        string    `json:"key"`
	Value      sentValue `json:"value"`
	TTLSeconds int       `json:"ttl_seconds,omitempty" minimum:"1"`
	IfVersion  int       `json:"if_version,omitempty" minimum:"1"`
	IfAbsent   bool      `json:"if_absent,omitempty"`
}

type itemKeyInput struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
}

type deleteItemInput struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
	IfVersion int      `json:"if_version,omitempty" minimum:"1"`
}

type searchInput struct {
	NamespacePrefix []string   `json:"namespace_prefix,omitempty"`
	Filter          sentObject `json:"filter,omitempty"`
	Limit           int        `json:"limit,omitempty" minimum:"1"`
	Offset          int        `json:"offset,omitempty" minimum:"0"`
}

type namespacesInput struct {
	Prefix   []string `json:"prefix,omitempty"`
	Suffix   []string `json:"suffix,omitempty"`
	MaxDepth int      `json:"max_depth,omitempty" minimum:"1"`
	Limit    int      `json:"limit,omitempty" minimum:"1"`
	Offset   int      `json:"offset,omitempty" minimum:"0"`
}

// memoryTools are the tools of namespaced memory, in order.
func memoryTools() []*toolDef {
	return []*toolDef{
		define(ToolPutMemoryItem, descPutItem, nil, nil, text((*Server).putItem)),
		define(ToolGetMemoryItem, descGetItem, annRead, outObject, object((*Server).getItem)),
		define(ToolDeleteMemoryItem, descDeleteItem, nil, nil, text((*Server).deleteItem)),
		define(ToolSearchMemory, descSearch, annRead, outItems, under("items", (*Server).searchItems)),
		define(ToolMemoryNamespaces, descNamespaces, annRead, outNamespaces, under("namespaces", (*Server).namespaces)),
	}
}

var (
	outItems      = &schema{Type: "object", Required: []string{"items"}}
	outNamespaces = &schema{Type: "object", Required: []string{"namespaces"}}
)

// memoryWrite says whether tool writes namespaced memory, and whether it
// is one of its tools at all.
func memoryWrite(tool string) (write, isItem bool) {
	switch tool {
	case ToolPutMemoryItem, ToolDeleteMemoryItem:
		return true, true
	case ToolGetMemoryItem, ToolSearchMemory, ToolMemoryNamespaces:
		return false, true
	}
	return false, false
}

func (s *Server) putItem(ctx context.Context, req *mcp.CallToolRequest, in putItemInput) (string, error) {
	v, err := valueArg(ctx, req, true)
	if err != nil {
		return "", err
	}
	it, err := service.MemoryPut(ctx, s.w, workspace.MemoryPutRequest{Namespace: in.Namespace, Key: in.Key, Value: v,
		TTLSeconds: in.TTLSeconds, IfVersion: in.IfVersion, IfAbsent: in.IfAbsent, Agent: s.agent})
	if err != nil {
		return "", redirect(err, workspace.ErrConflict, "call "+ToolGetMemoryItem+" to read it again, then retry with if_version set to its version")
	}
	msg := fmt.Sprintf("Stored '%s' under %s (version %d).", it.Key, it.Namespace, it.Version)
	if it.ExpiresAt != nil {
		msg += " It expires at " + it.ExpiresAt.Format(workspace.TimeFormat) + "."
	}
	return msg, nil
}

func (s *Server) getItem(ctx context.Context, _ *mcp.CallToolRequest, in itemKeyInput) (string, error) {
	it, err := service.MemoryGet(ctx, s.w, in.Namespace, in.Key)
	if err != nil {
		return "", redirect(err, workspace.ErrNotFound, "call "+ToolSearchMemory+" with the namespace as namespace_prefix to see which keys exist")
	}
	return toJSON(it)
}

func (s *Server) deleteItem(ctx context.Context, _ *mcp.CallToolRequest, in deleteItemInput) (string, error) {
	err := service.MemoryDelete(ctx, s.w, workspace.MemoryDeleteRequest{Namespace: in.Namespace, Key: in.Key, IfVersion: in.IfVersion, Agent: s.agent})
	if err != nil {
		return "", redirect(err, workspace.ErrNotFound, "call "+ToolSearchMemory+" with the namespace as namespace_prefix to see which keys exist")
	}
	return fmt.Sprintf("Deleted '%s' from %s.", in.Key, workspace.Namespace(in.Namespace)), nil
}

func (s *Server) searchItems(ctx context.Context, req *mcp.CallToolRequest, in searchInput) (string, error) {
	raw, _, err := rawArg(ctx, req, "filter")
	if err != nil {
		return "", err
	}
	f, err := service.MemoryFilter(s.w, raw)
	if err != nil {
		return "", err
	}
	items, err := service.MemorySearch(ctx, s.w, workspace.MemorySearchRequest{Prefix: in.NamespacePrefix, Filter: f, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return "", err
	}
	return toJSON(items)
}

func (s *Server) namespaces(ctx context.Context, _ *mcp.CallToolRequest, in namespacesInput) (string, error) {
	nss, err := service.MemoryNamespaces(ctx, s.w, workspace.NamespaceQuery{Prefix: in.Prefix, Suffix: in.Suffix, MaxDepth: in.MaxDepth, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return "", err
	}
	if nss == nil {
		nss = []workspace.Namespace{}
	}
	b, err := json.Marshal(nss)
	return string(b), err
}
